// Package termsafe makes untrusted text (model output, screen labels,
// server messages, recordings) safe to print on a terminal: it removes
// escape sequences, C0 and C1 control characters and the bidirectional
// overrides that can hide or reorder text, keeping newlines and tabs. The
// TUI, the plain printers and every command's text output use it, so the
// rule is in one place.
package termsafe

import (
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// String returns s safe to print: escape sequences (CSI, OSC and the other
// string sequences, up to their terminator or the end of the line) and
// control characters other than newline and tab are dropped, bidi
// embedding, override and isolate characters too, and invalid UTF-8
// becomes U+FFFD.
func String(s string) string {
	if clean(s) {
		return s
	}
	var f filter
	out := f.append(nil, []byte(s))
	return string(f.flush(out))
}

// Line returns s safe to print within one line (a table cell, a progress
// line): String, with newlines, carriage returns and tabs turned into
// spaces.
func Line(s string) string {
	s = String(s)
	if !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// clean reports whether s needs no change: printable ASCII, newlines,
// tabs and valid UTF-8 with nothing the filter drops.
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || drop(r) {
			return false
		}
		i += n
	}
	return true
}

// drop reports a non-ASCII rune that never reaches the terminal: C1
// controls and the bidi controls that reorder what follows them
// (Trojan Source); the zero-width marks are harmless and stay.
func drop(r rune) bool {
	return r >= 0x80 && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// state is where the filter is inside an escape sequence.
type state uint8

const (
	stText      state = iota
	stEsc             // after ESC
	stEscInter        // ESC followed by intermediate bytes
	stCSI             // control sequence: parameters until a final byte
	stString          // OSC, DCS, SOS, PM or APC: until BEL or ST
	stStringEsc       // ESC inside a string: ST if a backslash follows
)

// filter is the sanitizer's state machine; it works across writes.
type filter struct {
	st      state
	pending []byte // an incomplete UTF-8 sequence at the end of a write
}

// append filters p onto out.
func (f *filter) append(out, p []byte) []byte {
	if len(f.pending) > 0 {
		pend := f.pending
		f.pending = nil
		need := min(utf8.UTFMax-len(pend), len(p))
		buf := append(pend[:len(pend):len(pend)], p[:need]...)
		if !utf8.FullRune(buf) {
			f.pending = buf
			return out
		}
		r, n := utf8.DecodeRune(buf)
		out = f.rune(out, r, buf[:n])
		if n < len(pend) {
			// An invalid sequence: the pending bytes after its first are
			// input again.
			return f.append(out, append(pend[n:len(pend):len(pend)], p...))
		}
		p = p[n-len(pend):]
	}
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			out = f.rune(out, rune(c), p[i:i+1])
			i++
			continue
		}
		if !utf8.FullRune(p[i:]) {
			f.pending = append([]byte(nil), p[i:]...)
			break
		}
		r, n := utf8.DecodeRune(p[i:])
		out = f.rune(out, r, p[i:i+n])
		i += n
	}
	return out
}

// flush ends the input: a pending incomplete rune becomes U+FFFD.
func (f *filter) flush(out []byte) []byte {
	if len(f.pending) > 0 && f.st == stText {
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	f.pending = nil
	return out
}

// rune handles one rune whose bytes in the input are raw.
func (f *filter) rune(out []byte, r rune, raw []byte) []byte {
	switch f.st {
	case stEsc:
		switch {
		case r == '[':
			f.st = stCSI
			return out
		case r == ']' || r == 'P' || r == 'X' || r == '^' || r == '_':
			f.st = stString
			return out
		case r >= 0x20 && r <= 0x2f:
			f.st = stEscInter
			return out
		case r >= 0x30 && r <= 0x7e:
			f.st = stText
			return out
		}
		f.st = stText // not a sequence after all: the rune is text
	case stEscInter:
		switch {
		case r >= 0x20 && r <= 0x2f:
			return out
		case r >= 0x30 && r <= 0x7e:
			f.st = stText
			return out
		}
		f.st = stText
	case stCSI:
		switch {
		case r >= 0x20 && r <= 0x3f:
			return out
		case r >= 0x40 && r <= 0x7e:
			f.st = stText
			return out
		}
		f.st = stText
	case stString, stStringEsc:
		esc := f.st == stStringEsc
		f.st = stString
		switch {
		case r == 0x07 || r == 0x9c || esc && r == '\\':
			f.st = stText
			return out
		case r == 0x1b:
			f.st = stStringEsc
			return out
		case esc:
			// ESC ends the string and starts another sequence.
			f.st = stEsc
			return f.rune(out, r, raw)
		case r == '\n':
			// A string sequence ends at the line's end, so that text
			// after an unterminated one is not hidden for good.
			f.st = stText
		default:
			return out
		}
	}
	switch {
	case r == 0x1b:
		f.st = stEsc
	case r == 0x9b:
		f.st = stCSI
	case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f:
		f.st = stString
	case r == '\n' || r == '\t':
		out = append(out, byte(r))
	case r < 0x20 || r == 0x7f || drop(r):
	case r == utf8.RuneError && len(raw) == 1:
		out = utf8.AppendRune(out, utf8.RuneError)
	default:
		out = append(out, raw...)
	}
	return out
}

// Writer filters what is written to it as String does, keeping its state
// across writes (a sequence or a character may be split between them), and
// remembers the first error of the writer under it. It is safe for
// concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	f   filter
	buf []byte
	err error
}

// NewWriter returns a Writer filtering onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write filters p onto the underlying writer. It reports all of p written
// unless the underlying writer fails; after a failure every Write fails
// with the same error.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.buf = w.f.append(w.buf[:0], p)
	if len(w.buf) > 0 {
		if _, err := w.w.Write(w.buf); err != nil {
			w.err = err
			return 0, err
		}
	}
	return len(p), nil
}

// WriteString is Write for a string.
func (w *Writer) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Flush writes out an incomplete character left by the last Write (as
// U+FFFD) and returns the first error seen.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if out := w.f.flush(nil); len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			w.err = err
		}
	}
	return w.err
}

// Err returns the first error of the underlying writer.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// JSONWriter passes JSON through unchanged but for the characters String
// drops that encoding/json leaves raw (C1 controls, bidi controls): it
// writes them as \uXXXX escapes, which mean the same character to a JSON
// reader and nothing to a terminal. It relies on its input being JSON as
// encoding/json writes it (valid UTF-8, those characters only inside
// strings). It keeps a character split between writes, and is safe for
// concurrent use.
type JSONWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
	buf     []byte
	err     error
}

// NewJSONWriter returns a JSONWriter onto w.
func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

// Write escapes p onto the underlying writer, reporting all of p written
// unless that writer fails; after a failure every Write fails the same way.
func (w *JSONWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	in := p
	if len(w.pending) > 0 {
		in = append(w.pending, p...)
		w.pending = nil
	}
	out := w.buf[:0]
	for i := 0; i < len(in); {
		c := in[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		if !utf8.FullRune(in[i:]) {
			w.pending = append([]byte(nil), in[i:]...)
			break
		}
		r, n := utf8.DecodeRune(in[i:])
		if drop(r) {
			const hex = "0123456789abcdef"
			out = append(out, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
		} else {
			out = append(out, in[i:i+n]...)
		}
		i += n
	}
	w.buf = out
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			w.err = err
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes out an incomplete character left by the last Write as it
// came and returns the first error seen.
func (w *JSONWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && len(w.pending) > 0 {
		if _, err := w.w.Write(w.pending); err != nil {
			w.err = err
		}
	}
	w.pending = nil
	return w.err
}
