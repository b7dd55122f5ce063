package local

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model/constrain"
	"github.com/droidgo/droidgo/model/sample"
)

// constraint applies model/constrain to token choice. It works on the
// answer's bytes (pieces may end inside a UTF-8 character; the check only
// needs bytes), and uses the fact that viability is prefix-closed: a token
// whose first byte cannot follow the answer is out without building its
// text, which is what makes a 131072-token vocabulary cheap to filter.
type constraint struct {
	b      *Backend
	c      *constrain.Constraint
	answer []byte
	// validTo is where the answer's last, possibly incomplete, character
	// starts.
	validTo int
	// firstOK[c] says whether answer+c is viable, for the current answer.
	firstOK   [256]bool
	complete  bool
	buf       []byte
	survivors []int
	tmp       []byte
	sub       []float32
}

func newConstraint(b *Backend, tools []action.Tool, valid []int) *constraint {
	k := &constraint{b: b, c: constrain.New(tools, valid)}
	k.update()
	return k
}

// add appends a token's piece to the answer.
func (k *constraint) add(id int) {
	k.answer = append(k.answer, k.b.tok.Piece(id)...)
	k.update()
}

func (k *constraint) update() {
	_, k.complete = k.c.Check(string(k.answer))
	// Everything before the last (possibly incomplete) character is
	// known to be valid UTF-8.
	k.validTo = len(k.answer)
	for back := 1; back <= utf8.UTFMax && back <= len(k.answer); back++ {
		if utf8.RuneStart(k.answer[len(k.answer)-back]) {
			k.validTo = len(k.answer) - back
			break
		}
	}
	k.buf = append(k.buf[:0], k.answer...)
	k.buf = append(k.buf, 0)
	for c := range k.firstOK {
		k.buf[len(k.buf)-1] = byte(c)
		k.firstOK[c] = k.viable(k.buf)
	}
}

// viable reports whether text (the answer and more) can still become an
// accepted call, and is valid UTF-8 up to a last character that may be
// incomplete: the constraint lets through any text in string values
// (constrain allows all but "<"), but not byte garbage.
func (k *constraint) viable(text []byte) bool {
	tail := text[min(k.validTo, len(text)):]
	if !utf8Prefix(tail) {
		return false
	}
	if c := utf8Completion(tail); len(c) > 0 {
		// The text ends inside a character: it must still be possible to
		// finish it (a string value may be at its length limit), or the
		// answer could be stuck with no valid next token.
		k.tmp = append(append(k.tmp[:0], text...), c...)
		text = k.tmp
	}
	ok, _ := k.c.Check(string(text))
	return ok
}

// maxForced bounds the bytes forced returns at once.
const maxForced = 96

// forced returns the text that must follow the answer, byte by byte as
// long as exactly one byte can come next (e.g. after a tool with a single
// parameter, "<arg_key>index</arg_key><arg_value>"), stopping where the
// call is complete or a choice remains.
func (k *constraint) forced() []byte {
	if k.complete {
		return nil
	}
	next := -1
	for c, ok := range k.firstOK {
		if ok {
			if next >= 0 {
				return nil
			}
			next = c
		}
	}
	if next < 0 {
		return nil
	}
	text := append(k.buf[:0], k.answer...)
	text = append(text, byte(next))
	for len(text)-len(k.answer) < maxForced {
		if _, done := k.c.Check(string(text)); done {
			break
		}
		next = -1
		text = append(text, 0)
		for c := range 256 {
			text[len(text)-1] = byte(c)
			if k.viable(text) {
				if next >= 0 {
					next = -2
					break
				}
				next = c
			}
		}
		text = text[:len(text)-1]
		if next < 0 {
			break
		}
		text = append(text, byte(next))
	}
	k.buf = text
	return append([]byte(nil), text[len(k.answer):]...)
}

// utf8Completion returns the shortest bytes that complete the incomplete
// character at the end of b (valid UTF-8 up to it), or nil.
func utf8Completion(b []byte) []byte {
	start := len(b)
	for back := 1; back <= utf8.UTFMax && back <= len(b); back++ {
		if utf8.RuneStart(b[len(b)-back]) {
			start = len(b) - back
			break
		}
	}
	t := b[start:]
	if len(t) == 0 || utf8.FullRune(t) {
		return nil
	}
	lead := t[0]
	need := 2
	switch {
	case lead >= 0xF0:
		need = 4
	case lead >= 0xE0:
		need = 3
	}
	var out []byte
	for i := len(t); i < need; i++ {
		c := byte(0x80)
		if i == 1 {
			// The second byte's range depends on the lead byte.
			switch lead {
			case 0xE0:
				c = 0xA0
			case 0xF0:
				c = 0x90
			}
		}
		out = append(out, c)
	}
	return out
}

// utf8Prefix reports whether b is valid UTF-8 or a prefix of it.
func utf8Prefix(b []byte) bool {
	for len(b) > 0 {
		if !utf8.FullRune(b) {
			return true // the start of a character the next bytes may complete
		}
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			return false
		}
		b = b[n:]
	}
	return true
}

// allowed reports whether token id keeps the answer viable. The end of
// the turn is allowed only once the call is complete.
func (k *constraint) allowed(id int) bool {
	if id == k.b.eos {
		return k.complete
	}
	f := k.b.first[id]
	if f < 0 || !k.firstOK[f] {
		return false
	}
	k.buf = append(k.buf[:len(k.answer)], k.b.tok.Piece(id)...)
	return k.viable(k.buf)
}

// fullCheckMax is the number of first-byte survivors up to which
// candidates checks each one fully: in the restrictive states (a tool name,
// a key, an index, an enum value) few tokens survive, and checking them all
// makes the sampler's first candidates allowed ones.
const fullCheckMax = 8192

// dfsMaxBytes is the number of viable first bytes up to which candidates
// walks the sorted vocabulary instead of filtering every token.
const dfsMaxBytes = 48

// candidates lists, in id order, the tokens that may continue the answer:
// those whose first byte can follow it (EOS only when the call is
// complete), and, when few of them remain, only those passing the full
// check.
//
// In the restrictive states (a tool name, a key, an index, an enum value)
// few first bytes are viable, and the candidates are found by walking the
// vocabulary sorted by piece: a group of tokens sharing a prefix is
// checked once and skipped whole when the prefix is not viable, so the
// cost is one check per viable prefix and child group rather than one per
// token.
func (k *constraint) candidates(vocab int) []int {
	k.survivors = k.survivors[:0]
	viableBytes := 0
	for _, ok := range k.firstOK {
		if ok {
			viableBytes++
		}
	}
	if viableBytes <= dfsMaxBytes {
		k.walk(0, len(k.b.sorted), 0)
		if k.complete {
			k.survivors = append(k.survivors, k.b.eos)
		}
		slices.Sort(k.survivors)
		return k.survivors
	}
	for id := 0; id < vocab && id < len(k.b.first); id++ {
		if id == k.b.eos {
			if k.complete {
				k.survivors = append(k.survivors, id)
			}
			continue
		}
		if f := k.b.first[id]; f >= 0 && k.firstOK[f] {
			k.survivors = append(k.survivors, id)
		}
	}
	if len(k.survivors) > fullCheckMax {
		return k.survivors
	}
	kept := k.survivors[:0]
	for _, id := range k.survivors {
		if k.allowed(id) {
			kept = append(kept, id)
		}
	}
	k.survivors = kept
	return kept
}

// walk adds the tokens of sorted[lo:hi] that keep the answer viable; all
// of them share their first depth bytes, a viable continuation.
func (k *constraint) walk(lo, hi, depth int) {
	sorted, piece := k.b.sorted, k.b.tok.Piece
	i := lo
	for ; i < hi && len(piece(int(sorted[i]))) == depth; i++ {
		if id := int(sorted[i]); depth > 0 && id != k.b.eos {
			k.survivors = append(k.survivors, id)
		}
	}
	for i < hi {
		p := piece(int(sorted[i]))
		c := p[depth]
		j := i + sort.Search(hi-i, func(x int) bool { return piece(int(sorted[i+x]))[depth] > c })
		var ok bool
		if depth == 0 {
			ok = k.firstOK[c]
		} else {
			k.buf = append(append(k.buf[:len(k.answer)], p[:depth]...), c)
			ok = k.viable(k.buf)
		}
		if ok {
			k.walk(i, j, depth+1)
		}
		i = j
	}
}

// errDeadEnd is returned when no token can continue a constrained answer
// (a vocabulary without single-byte tokens could get there).
var errDeadEnd = errors.New("constrained answer: no token can continue the call")

// pick chooses the next answer token under the constraint. The sampler
// sees only the candidates' logits, which is the same distribution as
// masking the others to -Inf (softmax gives them nothing) but lets it rank
// a short list; it asks about the candidates lazily, in decreasing logit
// order. In closing mode (the turn's token budget is spent) special tokens
// that start with "<" (the tags that end values and the call) come first,
// then any "<" token, then anything allowed, so the call ends in a few
// tokens.
func (k *constraint) pick(s *sample.Sampler, logits []float32, closing bool) (int, error) {
	if k.complete {
		return k.b.eos, nil
	}
	ids := k.candidates(len(logits))
	if len(ids) == 0 {
		return 0, errDeadEnd
	}
	k.sub = k.sub[:0]
	for _, id := range ids {
		k.sub = append(k.sub, logits[id])
	}
	try := func(allow func(id int) bool) (int, error) {
		i, err := s.Pick(k.sub, func(i int) bool { return allow(ids[i]) })
		if err != nil {
			return 0, err
		}
		return ids[i], nil
	}
	if closing {
		lt := func(id int) bool { return strings.HasPrefix(k.b.tok.Piece(id), "<") }
		passes := []func(int) bool{
			func(id int) bool { return k.b.tok.IsSpecial(id) && lt(id) && k.allowed(id) },
			func(id int) bool { return lt(id) && k.allowed(id) },
		}
		for _, allow := range passes {
			id, err := try(allow)
			if err == nil {
				return id, nil
			}
			if !errors.Is(err, sample.ErrNoToken) {
				return 0, err
			}
		}
	}
	id, err := try(k.allowed)
	if errors.Is(err, sample.ErrNoToken) {
		return 0, errDeadEnd
	}
	return id, err
}
