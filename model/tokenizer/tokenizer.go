// Package tokenizer implements Spark-X2.5's tokenizer: byte-level BPE (the
// GPT-2 byte-to-unicode table, merges ranked by their order, no normalizer,
// no prefix space) behind Spark's pre-tokenizer, with special tokens matched
// as literal strings first. It produces the same ids as llama.cpp's
// tokenizer for a GGUF whose tokenizer.ggml.pre is "spark2_5", and can be
// built from GGUF metadata (FromGGUF), an HF tokenizer.json (FromHFDir) or
// plain data (New).
package tokenizer

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// TokenType is a token's type as GGUF's tokenizer.ggml.token_type stores it.
type TokenType int32

// Token types (llama.cpp's LLAMA_TOKEN_TYPE_*).
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// PreSpark is the pre-tokenizer name of Spark-X2.5 GGUFs
// (tokenizer.ggml.pre).
const PreSpark = "spark2_5"

// Vocab is the plain data a tokenizer is built from, in GGUF's terms.
type Vocab struct {
	// Tokens holds each token's text by id: byte-level encoded for normal
	// tokens, literal for special (control, user-defined) ones.
	Tokens []string
	// Types holds each token's type; nil means all normal.
	Types []TokenType
	// Merges are "LEFT RIGHT" pairs of token texts, best first.
	Merges []string
	// BOS and EOS are the begin and end of sequence ids, -1 if none.
	BOS, EOS int
	// Pre names the pre-tokenizer; only PreSpark (or "", meaning the same)
	// is supported.
	Pre string
}

// Tokenizer encodes text to token ids and back. It is safe for concurrent
// use.
type Tokenizer struct {
	tokens []string
	types  []TokenType
	pieces []string // decoded bytes of each token
	ids    map[string]int
	bos    int
	eos    int

	// BPE over interned symbols: ids < len(tokens) are vocabulary tokens,
	// higher ones strings that only merges mention.
	merges  map[uint64]merge
	byteSym [256]int32
	symText []string // byte-level text of the extra symbols, from len(tokens)

	specials []int // control, user-defined and unknown tokens, longest first
	rank     []int // position of each token in specials, -1 if not special
	trie     []trieNode
	root     [256]int32 // trie children of the root by byte; 0 = none

	mu    sync.Mutex
	cache map[string][]int32

	pool sync.Pool // *session
}

type merge struct {
	rank   int32
	result int32
}

// maxCache bounds the word cache; it is cleared when full.
const maxCache = 1 << 16

// New builds a tokenizer from plain vocabulary data.
func New(v Vocab) (*Tokenizer, error) {
	if v.Pre != "" && v.Pre != PreSpark {
		return nil, fmt.Errorf("unsupported pre-tokenizer %q (only %q is implemented)", v.Pre, PreSpark)
	}
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("vocabulary has no tokens")
	}
	if v.Types != nil && len(v.Types) < n {
		return nil, fmt.Errorf("vocabulary has %d token types for %d tokens", len(v.Types), n)
	}
	for _, id := range []int{v.BOS, v.EOS} {
		if id >= n || id < -1 {
			return nil, fmt.Errorf("special token id %d is outside the vocabulary of %d tokens", id, n)
		}
	}
	t := &Tokenizer{
		tokens: make([]string, n),
		types:  make([]TokenType, n),
		pieces: make([]string, n),
		ids:    make(map[string]int, n),
		bos:    v.BOS,
		eos:    v.EOS,
		merges: make(map[uint64]merge, len(v.Merges)),
		cache:  map[string][]int32{},
	}
	for i, s := range v.Tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i) // as llama.cpp names empty tokens
		}
		if j, dup := t.ids[s]; dup {
			return nil, fmt.Errorf("tokens %d and %d have the same text %q", j, i, s)
		}
		t.ids[s] = i
		t.tokens[i] = s
		t.types[i] = TypeNormal
		if v.Types != nil {
			t.types[i] = v.Types[i]
		}
		if t.IsSpecial(i) {
			t.pieces[i] = s
			t.specials = append(t.specials, i)
		} else {
			t.pieces[i] = string(unByteLevel(s))
		}
	}
	slices.SortStableFunc(t.specials, func(a, b int) int { return cmp.Compare(len(t.tokens[b]), len(t.tokens[a])) })
	t.rank = make([]int, n)
	for i := range t.rank {
		t.rank[i] = -1
	}
	t.trie = []trieNode{{id: -1}}
	for r, id := range t.specials {
		t.rank[id] = r
		t.addTrie(t.tokens[id], id)
	}
	for c, n := range t.trie[0].next {
		t.root[c] = n
	}

	extra := map[string]int32{}
	internFast := func(s string) int32 {
		if id, ok := t.ids[s]; ok {
			return int32(id)
		}
		if id, ok := extra[s]; ok {
			return id
		}
		t.symText = append(t.symText, s)
		id := int32(n + len(t.symText) - 1)
		extra[s] = id
		return id
	}
	for b := 0; b < 256; b++ {
		t.byteSym[b] = internFast(string(byteToRune[b]))
	}
	for rank, m := range v.Merges {
		// llama.cpp splits at the first space after the first byte.
		p := -1
		if len(m) > 1 {
			if q := strings.IndexByte(m[1:], ' '); q >= 0 {
				p = q + 1
			}
		}
		if p < 0 || p+1 >= len(m) {
			continue // malformed: llama.cpp stores an unmatchable pair
		}
		l, r := internFast(m[:p]), internFast(m[p+1:])
		key := uint64(uint32(l))<<32 | uint64(uint32(r))
		if _, seen := t.merges[key]; seen {
			continue // the first rank wins
		}
		t.merges[key] = merge{rank: int32(rank), result: internFast(m[:p] + m[p+1:])}
	}
	t.pool.New = func() any { return new(session) }
	return t, nil
}

// VocabSize returns the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS returns the begin-of-sequence id, or -1.
func (t *Tokenizer) BOS() int { return t.bos }

// EOS returns the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int { return t.eos }

// Token returns the vocabulary text of id (byte-level encoded for normal
// tokens), or "" when id is out of range.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Type returns the type of id.
func (t *Tokenizer) Type(id int) TokenType {
	if id < 0 || id >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// ID returns the id of the token whose vocabulary text is s.
func (t *Tokenizer) ID(s string) (int, bool) {
	id, ok := t.ids[s]
	return id, ok
}

// IsSpecial reports whether id is a control, user-defined or unknown token:
// the tokens matched as literal text when encoding with special tokens on,
// and decoded as their text.
func (t *Tokenizer) IsSpecial(id int) bool {
	switch t.Type(id) {
	case TypeControl, TypeUserDefined, TypeUnknown:
		return true
	}
	return false
}

// Piece returns the text id decodes to: its bytes for a normal token (which
// may be part of a UTF-8 character), its literal text for a special one, ""
// for an id out of range.
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Decode returns the text of ids concatenated. Special tokens are rendered as
// their text; ids out of range are skipped.
func (t *Tokenizer) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(t.Piece(id))
	}
	return b.String()
}

// Encode returns the token ids of text. With special set, the texts of
// special tokens (control, user-defined, unknown) in text become those
// tokens, like llama.cpp's parse_special; otherwise only user-defined tokens
// are. No BOS is added.
func (t *Tokenizer) Encode(text string, special bool) []int {
	out := make([]int, 0, len(text)/3+4)
	s := t.pool.Get().(*session)
	defer t.pool.Put(s)
	for _, f := range t.fragments(text, special) {
		if f.id >= 0 {
			out = append(out, f.id)
			continue
		}
		s.sp.split(sanitize(text[f.start:f.end]), func(word string) {
			out = t.appendWord(out, s, word)
		})
	}
	return out
}

type fragment struct {
	id         int // a special token, or -1 for raw text [start, end)
	start, end int
}

// fragments cuts text at special tokens the way llama.cpp does: each special
// token, longest first, is searched for in the raw text left by the ones
// before it.
func (t *Tokenizer) fragments(text string, special bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{id: -1, start: 0, end: len(text)}}
	for _, id := range t.present(text) {
		if !special && t.types[id] != TypeUserDefined {
			continue
		}
		tok := t.tokens[id]
		var next []fragment
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			for f.start < f.end {
				k := strings.Index(text[f.start:f.end], tok)
				if k < 0 {
					next = append(next, f)
					break
				}
				if k > 0 {
					next = append(next, fragment{id: -1, start: f.start, end: f.start + k})
				}
				next = append(next, fragment{id: id})
				f.start += k + len(tok)
			}
		}
		frags = next
	}
	return frags
}

// trieNode is a node of the trie of special token texts.
type trieNode struct {
	next map[byte]int32
	id   int // the special token ending here, or -1
}

func (t *Tokenizer) addTrie(s string, id int) {
	n := int32(0)
	for i := 0; i < len(s); i++ {
		nx, ok := t.trie[n].next[s[i]]
		if !ok {
			if t.trie[n].next == nil {
				t.trie[n].next = map[byte]int32{}
			}
			nx = int32(len(t.trie))
			t.trie[n].next[s[i]] = nx
			t.trie = append(t.trie, trieNode{id: -1})
		}
		n = nx
	}
	t.trie[n].id = id
}

// present returns the special tokens occurring anywhere in text, in the
// order fragments must process them (longest first). One pass over text
// with the trie replaces a search per special token, which matters for
// vocabularies with hundreds of reserved ones.
func (t *Tokenizer) present(text string) []int {
	if len(t.specials) == 0 {
		return nil
	}
	var found []int
	for i := 0; i < len(text); i++ {
		n := t.root[text[i]]
		ok := n != 0
		for j := i + 1; ok; j++ {
			if id := t.trie[n].id; id >= 0 && !slices.Contains(found, id) {
				found = append(found, id)
			}
			if j == len(text) {
				break
			}
			n, ok = t.trie[n].next[text[j]]
		}
	}
	slices.SortFunc(found, func(a, b int) int { return cmp.Compare(t.rank[a], t.rank[b]) })
	return found
}

// session holds one encoding's scratch buffers.
type session struct {
	sp   splitter
	syms []symbol
	q    bigramQueue
}

type symbol struct {
	id         int32
	prev, next int32
}

// appendWord appends the ids of one pre-token, from the cache when possible.
func (t *Tokenizer) appendWord(out []int, s *session, word string) []int {
	t.mu.Lock()
	ids, ok := t.cache[word]
	t.mu.Unlock()
	if !ok {
		ids = t.bpe(s, word)
		t.mu.Lock()
		if len(t.cache) >= maxCache {
			clear(t.cache)
		}
		t.cache[strings.Clone(word)] = ids
		t.mu.Unlock()
	}
	for _, id := range ids {
		out = append(out, int(id))
	}
	return out
}

// bpe merges the bytes of word, lowest rank first and leftmost first among
// equal ranks (llama.cpp's order), and maps the resulting symbols to ids.
func (t *Tokenizer) bpe(s *session, word string) []int32 {
	syms := s.syms[:0]
	for i := 0; i < len(word); i++ {
		syms = append(syms, symbol{id: t.byteSym[word[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	syms[len(syms)-1].next = -1
	q := s.q[:0]
	push := func(l int32) {
		if l < 0 || syms[l].next < 0 {
			return
		}
		r := syms[l].next
		m, ok := t.merges[uint64(uint32(syms[l].id))<<32|uint64(uint32(syms[r].id))]
		if !ok {
			return
		}
		heap.Push(&q, bigram{rank: m.rank, left: l, right: r, lid: syms[l].id, rid: syms[r].id, result: m.result})
	}
	for i := 0; i+1 < len(syms); i++ {
		push(int32(i))
	}
	for len(q) > 0 {
		b := heap.Pop(&q).(bigram)
		l, r := &syms[b.left], &syms[b.right]
		if l.id != b.lid || r.id != b.rid || l.next != b.right || r.id < 0 {
			continue // stale
		}
		l.id = b.result
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		r.id = -1
		push(l.prev)
		push(b.left)
	}
	s.syms, s.q = syms, q

	var ids []int32
	for i := int32(0); i >= 0; i = syms[i].next {
		id := syms[i].id
		if int(id) < len(t.tokens) {
			ids = append(ids, id)
			continue
		}
		// A symbol the vocabulary lacks: llama.cpp looks each byte of its
		// byte-level text up as a token and drops the ones it cannot find.
		text := t.symText[int(id)-len(t.tokens)]
		for j := 0; j < len(text); j++ {
			if k, ok := t.ids[text[j:j+1]]; ok {
				ids = append(ids, int32(k))
			}
		}
	}
	return ids
}

type bigram struct {
	rank, left, right int32
	lid, rid, result  int32
}

type bigramQueue []bigram

func (q bigramQueue) Len() int { return len(q) }
func (q bigramQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].left < q[j].left
}
func (q bigramQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bigramQueue) Push(x any)   { *q = append(*q, x.(bigram)) }
func (q *bigramQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
