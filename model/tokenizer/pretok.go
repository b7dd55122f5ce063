package tokenizer

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Spark's pre-tokenizer, as llama.cpp applies it (LLAMA_VOCAB_PRE_TYPE_SPARK2_5).
// Four regexes split the text in sequence, each inside the pieces left by the
// previous one, matches and the gaps between them both becoming pieces:
//
//  1. \p{N}{1,3}
//  2. [一-龥぀-ゟ゠-ヿ]+
//  3. [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+
//  4. \p{N}
//
// Splits 1 and 4 together make every number code point a piece of its own
// and a boundary for the others, so the scanner below does that directly,
// cuts the rest into runs inside and outside the CJK ranges (split 2), and
// runs a hand-written matcher for regex 3 (ECMAScript semantics: the first
// alternative that matches wins, with backtracking) on each run. Go's regexp
// cannot express the (?!\S) lookahead, and a scanner is much faster anyway.
//
// llama.cpp matches with std::regex on a "collapsed" copy of the text in
// which every non-ASCII code point becomes one byte standing for its class, so
// the classes below follow it: ASCII characters are classified by their ASCII
// ranges (letters are only A-Z and a-z; control characters belong to no
// class), \s is ASCII \t\n\v\f\r and space plus the Unicode White_Space code
// points, and other non-ASCII code points are classified by their Unicode
// general category (L, M, N, P, S; anything else belongs to no class).

// Character class bits.
const (
	fWS  = 1 << iota // \s
	fNL              // \r or \n
	fL               // \p{L}
	fM               // \p{M}
	fN               // \p{N}
	fPS              // \p{P} or \p{S}
	fAL              // [A-Za-z]
	fAPS             // ASCII punctuation or symbol
	fSP              // the ASCII space
)

var (
	bmpOnce  sync.Once
	bmpClass []uint16
)

// classOf returns the class bits of a code point.
func classOf(r rune) uint16 {
	if r < 0x10000 && r >= 0 {
		bmpOnce.Do(buildBMP)
		return bmpClass[r]
	}
	return computeClass(r)
}

func buildBMP() {
	t := make([]uint16, 0x10000)
	for r := range t {
		t[r] = computeClass(rune(r))
	}
	bmpClass = t
}

// llamaSpace lists the non-ASCII White_Space code points llama.cpp knows.
func llamaSpace(r rune) bool {
	switch {
	case r == 0x85, r == 0xA0, r == 0x1680, r >= 0x2000 && r <= 0x200A,
		r == 0x2028, r == 0x2029, r == 0x202F, r == 0x205F, r == 0x3000:
		return true
	}
	return false
}

func computeClass(r rune) uint16 {
	if r < 0x80 {
		switch {
		case r == '\r' || r == '\n':
			return fWS | fNL
		case r == ' ':
			return fWS | fSP
		case r >= '\t' && r <= '\r':
			return fWS
		case (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z'):
			return fL | fAL
		case r >= '0' && r <= '9':
			return fN
		case r > ' ' && r < 0x7F:
			return fPS | fAPS
		}
		return 0
	}
	switch {
	case llamaSpace(r):
		return fWS
	// llama.cpp's tables are Unicode 15.1, Go's 15.0; these are the code
	// points 15.1 added (checked over all code points against llama.cpp's
	// unicode-data.cpp).
	case r >= 0x2EBF0 && r <= 0x2EE5D:
		return fL
	case (r >= 0x2FFC && r <= 0x2FFF) || r == 0x31EF:
		return fPS
	case unicode.IsLetter(r):
		return fL
	case unicode.Is(unicode.M, r):
		return fM
	case unicode.IsNumber(r):
		return fN
	case unicode.IsPunct(r) || unicode.IsSymbol(r):
		return fPS
	}
	return 0
}

// isCJK reports whether r is in split 2's ranges.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FA5) || (r >= 0x3040 && r <= 0x30FF)
}

// splitter holds the scratch buffers of one pre-tokenization.
type splitter struct {
	cls []uint16
	off []int32 // byte offset of each code point, plus one past the end
	cjk []bool
}

// split cuts s (valid UTF-8) into pre-tokens and calls fn with each.
func (sp *splitter) split(s string, fn func(word string)) {
	sp.cls = sp.cls[:0]
	sp.off = sp.off[:0]
	sp.cjk = sp.cjk[:0]
	for i, r := range s {
		sp.cls = append(sp.cls, classOf(r))
		sp.off = append(sp.off, int32(i))
		sp.cjk = append(sp.cjk, isCJK(r))
	}
	n := len(sp.cls)
	sp.off = append(sp.off, int32(len(s)))
	word := func(a, b int) { fn(s[sp.off[a]:sp.off[b]]) }

	i := 0
	for i < n {
		if sp.cls[i]&fN != 0 {
			word(i, i+1)
			i++
			continue
		}
		// A run without numbers, all inside or all outside the CJK ranges.
		j := i + 1
		for j < n && sp.cls[j]&fN == 0 && sp.cjk[j] == sp.cjk[i] {
			j++
		}
		sp.scan(i, j, word)
		i = j
	}
}

// scan applies regex 3 to code points [lo, hi): matches and the gaps between
// them become words.
func (sp *splitter) scan(lo, hi int, word func(a, b int)) {
	gap := lo
	for pos := lo; pos < hi; {
		m := sp.match(pos, hi)
		if m == 0 {
			pos++
			continue
		}
		if gap < pos {
			word(gap, pos)
		}
		word(pos, pos+m)
		pos += m
		gap = pos
	}
	if gap < hi {
		word(gap, hi)
	}
}

// match returns the length of regex 3's match at i (bounded by hi), or 0.
func (sp *splitter) match(i, hi int) int {
	c := sp.cls
	run := func(j int, mask uint16) int {
		for j < hi && c[j]&mask != 0 {
			j++
		}
		return j
	}
	// [ASCII punct][A-Za-z]+
	if c[i]&fAPS != 0 && i+1 < hi && c[i+1]&fAL != 0 {
		return run(i+1, fAL) - i
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if c[i]&(fNL|fL|fPS) == 0 && i+1 < hi && c[i+1]&(fL|fM) != 0 {
		return run(i+1, fL|fM) - i
	}
	if c[i]&(fL|fM) != 0 {
		return run(i, fL|fM) - i
	}
	// " ?[\p{P}\p{S}]+"
	if c[i]&fSP != 0 && i+1 < hi && c[i+1]&fPS != 0 {
		return run(i+1, fPS) - i
	}
	if c[i]&fPS != 0 {
		return run(i, fPS) - i
	}
	// [\r\n]
	if c[i]&fNL != 0 {
		return 1
	}
	// \s+(?!\S)|\s+
	if c[i]&fWS != 0 {
		j := run(i, fWS)
		if j == hi || j-i == 1 {
			return j - i
		}
		return j - 1 - i
	}
	return 0
}

// sanitize returns s as llama.cpp sees it: it decodes UTF-8 leniently
// (accepting overlong forms) and replaces each byte it cannot decode with
// U+FFFD, then re-encodes. Valid UTF-8 is returned unchanged. One deliberate
// difference: llama.cpp keeps an encoded surrogate (ED A0 80..ED BF BF) as
// is, which a valid Go string cannot hold, so it becomes U+FFFD here.
func sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := llamaDecode(s, i)
		if n == 0 {
			b.WriteString("\uFFFD")
			i++
			continue
		}
		b.WriteRune(r) // a surrogate (r < 0) is written as U+FFFD
		i += n
	}
	return b.String()
}

// llamaDecode decodes one code point at s[i] the way llama.cpp does. It
// returns n == 0 for bytes llama.cpp replaces with U+FFFD, and r < 0 for a
// surrogate (which Go cannot hold in a valid string; the caller keeps its
// bytes). Code points above U+10FFFF, which make llama.cpp throw, count as
// undecodable.
func llamaDecode(s string, i int) (r rune, n int) {
	b0 := s[i]
	cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
	switch {
	case b0&0x80 == 0:
		return rune(b0), 1
	case b0&0x40 == 0:
		return 0, 0
	case b0&0x20 == 0:
		if !cont(1) {
			return 0, 0
		}
		return rune(b0&0x1F)<<6 | rune(s[i+1]&0x3F), 2
	case b0&0x10 == 0:
		if !cont(1) || !cont(2) {
			return 0, 0
		}
		r = rune(b0&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
		if r >= 0xD800 && r <= 0xDFFF {
			return -1, 3
		}
		return r, 3
	case b0&0x08 == 0:
		if !cont(1) || !cont(2) || !cont(3) {
			return 0, 0
		}
		r = rune(b0&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
		if r > unicode.MaxRune {
			return 0, 0
		}
		return r, 4
	}
	return 0, 0
}
