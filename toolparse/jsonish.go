package toolparse

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 64

// jsonRepairs counts what the lenient JSON reader had to accept or fix, so
// that each kind of repair is reported once, as a sentence.
type jsonRepairs struct {
	singleQuotes   bool
	unquotedKeys   bool
	unquotedValues bool
	trailingComma  bool
	missingComma   bool
	pythonLiterals bool
	equalsSign     bool
	stringCut      bool
	closedAtEnd    int // containers still open when the text ended
	closedEarly    int // containers closed where other text began
	mismatched     bool
	innerQuote     bool
}

func (r *jsonRepairs) notes() []string {
	var out []string
	if r.stringCut {
		out = append(out, "a JSON string was cut off by the end of the output; ended it there")
	}
	if r.closedAtEnd > 0 {
		out = append(out, fmt.Sprintf("the JSON was cut off with %d bracket(s) still open; closed them at the end of the output", r.closedAtEnd))
	}
	if r.closedEarly > 0 {
		out = append(out, fmt.Sprintf("the JSON left %d bracket(s) open before other text; closed them there", r.closedEarly))
	}
	if r.mismatched {
		out = append(out, "the JSON closed a bracket with the wrong kind; treated it as closing the open one")
	}
	if r.innerQuote {
		out = append(out, "a JSON string held an unescaped quote; kept it as part of the text")
	}
	if r.singleQuotes {
		out = append(out, "the JSON used single quotes; read them as double quotes")
	}
	if r.unquotedKeys {
		out = append(out, "the JSON had unquoted keys; read them as strings")
	}
	if r.unquotedValues {
		out = append(out, "the JSON had unquoted text values; read them as strings")
	}
	if r.equalsSign {
		out = append(out, "the JSON used '=' between key and value; read it as ':'")
	}
	if r.trailingComma {
		out = append(out, "the JSON had a trailing or doubled comma; ignored it")
	}
	if r.missingComma {
		out = append(out, "the JSON was missing a comma between members; added it")
	}
	if r.pythonLiterals {
		out = append(out, "the JSON used Python literals (True/False/None); read them as true/false/null")
	}
	return out
}

// jsonReader is a forgiving JSON reader for model output. Numbers come out
// as json.Number (so coercion can tell 3 from 3.0), objects as
// map[string]any, arrays as []any.
type jsonReader struct {
	s     string
	pos   int
	depth int
	rep   jsonRepairs
	// bareStop lists the bytes that end an unquoted value; "" means
	// ",}]" and line ends.
	bareStop string
}

// errNotJSON means the text at the position does not start a value.
type errNotJSON struct{ msg string }

func (e errNotJSON) Error() string { return e.msg }

// readJSON reads one value starting at s[start] (which should be '{' or
// '['), repairing what it can. It returns the value, the offset just after
// it, and the repairs made.
func readJSON(s string, start int) (any, int, []string, error) {
	r := &jsonReader{s: s, pos: start}
	v, err := r.value()
	if err != nil {
		return nil, r.pos, nil, err
	}
	return v, r.pos, r.rep.notes(), nil
}

// readJSONExact reads s as one whole JSON value (surrounding space
// allowed); ok is false when s is not exactly one valid, unrepaired value.
func readJSONExact(s string) (any, bool) {
	r := &jsonReader{s: s}
	r.ws()
	if r.eof() {
		return nil, false
	}
	v, err := r.value()
	if err != nil {
		return nil, false
	}
	r.ws()
	if !r.eof() || len(r.rep.notes()) > 0 {
		return nil, false
	}
	return v, true
}

func (r *jsonReader) eof() bool { return r.pos >= len(r.s) }

func (r *jsonReader) ws() {
	for r.pos < len(r.s) {
		switch r.s[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

func (r *jsonReader) value() (any, error) {
	r.ws()
	if r.eof() {
		return nil, errNotJSON{"the JSON ended where a value was expected"}
	}
	switch c := r.s[r.pos]; {
	case c == '{':
		return r.object()
	case c == '[':
		return r.array()
	case c == '"' || c == '\'':
		return r.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return r.number()
	case isIdentStart(c):
		return r.word()
	default:
		return nil, errNotJSON{fmt.Sprintf("unexpected %q in JSON", c)}
	}
}

func (r *jsonReader) enter() error {
	r.depth++
	if r.depth > maxDepth {
		return errNotJSON{"the JSON is nested too deeply"}
	}
	return nil
}

func (r *jsonReader) object() (any, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer func() { r.depth-- }()
	r.pos++ // '{'
	m := map[string]any{}
	for {
		r.ws()
		if r.eof() {
			r.rep.closedAtEnd++
			return m, nil
		}
		switch r.s[r.pos] {
		case '}':
			r.pos++
			return m, nil
		case ',':
			r.rep.trailingComma = true
			r.pos++
			continue
		case ']':
			r.rep.mismatched = true
			r.pos++
			return m, nil
		}
		key, ok := r.key()
		if !ok {
			r.rep.closedEarly++
			return m, nil
		}
		r.ws()
		if r.eof() {
			r.rep.closedAtEnd++
			return m, nil
		}
		v, err := r.value()
		if err != nil {
			if r.eof() {
				r.rep.closedAtEnd++
				return m, nil
			}
			return nil, err
		}
		m[key] = v
		r.ws()
		if r.eof() {
			r.rep.closedAtEnd++
			return m, nil
		}
		switch c := r.s[r.pos]; {
		case c == ',':
			r.pos++
			r.ws()
			if !r.eof() && r.s[r.pos] == '}' {
				r.rep.trailingComma = true
			}
		case c == '}':
			r.pos++
			return m, nil
		case c == ']':
			r.rep.mismatched = true
			r.pos++
			return m, nil
		case r.looksLikeKey():
			r.rep.missingComma = true
		default:
			r.rep.closedEarly++
			return m, nil
		}
	}
}

// key reads an object key and the ':' (or '=') after it. It does not move
// when the text there is not a key.
func (r *jsonReader) key() (string, bool) {
	save, saveRep := r.pos, r.rep
	var k string
	c := r.s[r.pos]
	switch {
	case c == '"' || c == '\'':
		v, err := r.str()
		if err != nil {
			r.pos, r.rep = save, saveRep
			return "", false
		}
		k = v.(string)
	case isIdentStart(c):
		start := r.pos
		for r.pos < len(r.s) && isIdentChar(r.s[r.pos]) {
			r.pos++
		}
		k = r.s[start:r.pos]
		r.rep.unquotedKeys = true
	default:
		return "", false
	}
	r.ws()
	if r.eof() {
		// A key cut off before its colon: nothing to keep, but it is
		// still the end of the text.
		return k, true
	}
	switch r.s[r.pos] {
	case ':':
		r.pos++
		return k, true
	case '=':
		r.rep.equalsSign = true
		r.pos++
		return k, true
	}
	r.pos, r.rep = save, saveRep
	return "", false
}

// looksLikeKey reports whether a key and a colon follow, without moving.
func (r *jsonReader) looksLikeKey() bool {
	save, saveRep := r.pos, r.rep
	_, ok := r.key()
	ok = ok && !r.eof()
	r.pos, r.rep = save, saveRep
	return ok
}

func (r *jsonReader) array() (any, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer func() { r.depth-- }()
	r.pos++ // '['
	a := []any{}
	for {
		r.ws()
		if r.eof() {
			r.rep.closedAtEnd++
			return a, nil
		}
		switch r.s[r.pos] {
		case ']':
			r.pos++
			return a, nil
		case ',':
			r.rep.trailingComma = true
			r.pos++
			continue
		case '}':
			r.rep.mismatched = true
			r.pos++
			return a, nil
		}
		save := r.pos
		v, err := r.value()
		if err != nil {
			if r.eof() {
				r.rep.closedAtEnd++
				return a, nil
			}
			r.pos = save
			r.rep.closedEarly++
			return a, nil
		}
		a = append(a, v)
		r.ws()
		if r.eof() {
			r.rep.closedAtEnd++
			return a, nil
		}
		switch c := r.s[r.pos]; {
		case c == ',':
			r.pos++
			r.ws()
			if !r.eof() && r.s[r.pos] == ']' {
				r.rep.trailingComma = true
			}
		case c == ']':
			r.pos++
			return a, nil
		case c == '}':
			r.rep.mismatched = true
			r.pos++
			return a, nil
		case c == '{' || c == '[' || c == '"':
			r.rep.missingComma = true
		default:
			r.rep.closedEarly++
			return a, nil
		}
	}
}

func (r *jsonReader) str() (any, error) {
	q := r.s[r.pos]
	if q == '\'' {
		r.rep.singleQuotes = true
	}
	r.pos++
	var b strings.Builder
	for {
		if r.eof() {
			r.rep.stringCut = true
			return b.String(), nil
		}
		c := r.s[r.pos]
		switch {
		case c == q && !r.innerQuote(r.pos+1, q):
			r.pos++
			return b.String(), nil
		case c == q:
			// A quote the model forgot to escape ("say "hi" now"): the
			// string goes on.
			r.rep.innerQuote = true
			b.WriteByte(c)
			r.pos++
		case c == '\\':
			r.pos++
			if r.eof() {
				r.rep.stringCut = true
				return b.String(), nil
			}
			e := r.s[r.pos]
			r.pos++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'u':
				b.WriteRune(r.unicodeEscape())
			default:
				// \" \' \\ \/ and unknown escapes: keep the character.
				b.WriteByte(e)
			}
		default:
			_, size := utf8.DecodeRuneInString(r.s[r.pos:])
			b.WriteString(r.s[r.pos : r.pos+size])
			r.pos += size
		}
	}
}

// innerQuote reports whether the quote q just before s[i] is one the
// model forgot to escape rather than the end of the string: text follows on
// the same line that is neither punctuation that may follow a value or key
// nor the next key of an object that lacks a comma.
func (r *jsonReader) innerQuote(i int, q byte) bool {
	j := i
	for j < len(r.s) && (r.s[j] == ' ' || r.s[j] == '\t') {
		j++
	}
	if j >= len(r.s) || strings.IndexByte(",:}])=\r\n", r.s[j]) >= 0 {
		return false
	}
	if c := r.s[j]; c == '"' || c == '\'' {
		// "a": "x" "b": 1 is a missing comma, not an inner quote.
		if k := strings.IndexByte(r.s[j+1:], c); k >= 0 {
			rest := strings.TrimLeft(r.s[j+1+k+1:], " \t")
			return !strings.HasPrefix(rest, ":")
		}
	}
	return true
}

// unicodeEscape reads the XXXX of \uXXXX (and a following low surrogate);
// a malformed escape yields U+FFFD.
func (r *jsonReader) unicodeEscape() rune {
	hex4 := func() (rune, bool) {
		if r.pos+4 > len(r.s) {
			return 0, false
		}
		n, err := strconv.ParseUint(r.s[r.pos:r.pos+4], 16, 32)
		if err != nil {
			return 0, false
		}
		r.pos += 4
		return rune(n), true
	}
	c, ok := hex4()
	if !ok {
		return utf8.RuneError
	}
	if utf16.IsSurrogate(c) && strings.HasPrefix(r.s[r.pos:], `\u`) {
		save := r.pos
		r.pos += 2
		if c2, ok := hex4(); ok {
			if d := utf16.DecodeRune(c, c2); d != utf8.RuneError {
				return d
			}
		}
		r.pos = save
	}
	if utf16.IsSurrogate(c) {
		return utf8.RuneError
	}
	return c
}

func (r *jsonReader) number() (any, error) {
	start := r.pos
	if r.s[r.pos] == '-' {
		r.pos++
	}
	digits := func() int {
		n := 0
		for r.pos < len(r.s) && r.s[r.pos] >= '0' && r.s[r.pos] <= '9' {
			r.pos++
			n++
		}
		return n
	}
	if digits() == 0 {
		return nil, errNotJSON{"a '-' in JSON is not followed by a number"}
	}
	end := r.pos
	if r.pos < len(r.s) && r.s[r.pos] == '.' {
		r.pos++
		if digits() > 0 {
			end = r.pos
		} else {
			r.pos = end // "3." : keep the 3
		}
	}
	if r.pos < len(r.s) && (r.s[r.pos] == 'e' || r.s[r.pos] == 'E') {
		save := r.pos
		r.pos++
		if r.pos < len(r.s) && (r.s[r.pos] == '+' || r.s[r.pos] == '-') {
			r.pos++
		}
		if digits() > 0 {
			end = r.pos
		} else {
			r.pos = save
		}
	}
	r.pos = end
	return json.Number(r.s[start:end]), nil
}

// word reads a bare word: a JSON or Python literal, or an unquoted string
// value that runs to the next ',', '}', ']' or line end.
func (r *jsonReader) word() (any, error) {
	start := r.pos
	for r.pos < len(r.s) && isIdentChar(r.s[r.pos]) {
		r.pos++
	}
	switch w := r.s[start:r.pos]; w {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	case "True":
		r.rep.pythonLiterals = true
		return true, nil
	case "False":
		r.rep.pythonLiterals = true
		return false, nil
	case "None":
		r.rep.pythonLiterals = true
		return nil, nil
	}
	stop := r.bareStop
	if stop == "" {
		stop = ",}]\n\r"
	}
	for r.pos < len(r.s) && strings.IndexByte(stop, r.s[r.pos]) < 0 {
		r.pos++
	}
	r.rep.unquotedValues = true
	return strings.TrimSpace(r.s[start:r.pos]), nil
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'
}
