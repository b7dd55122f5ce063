package termsafe

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "Wi-Fi is on\n\tnext", "Wi-Fi is on\n\tnext"},
		{"unicode", "设置 · café ✓", "设置 · café ✓"},
		{"clipboard OSC 52", "a\x1b]52;c;ZXZpbA==\x07b", "ab"},
		{"title OSC 0 with ST", "a\x1b]0;pwned\x1b\\b", "ab"},
		{"clear screen", "a\x1b[2Jb\x1b[1;31mred\x1b[0m", "abred"},
		{"C1 CSI", "a\u009b2Jb", "ab"},
		{"C1 OSC", "a\u009d0;t\u009cb", "ab"},
		{"charset ESC ( B", "a\x1b(Bb", "ab"},
		{"ESC then letter", "a\x1bcb", "ab"},
		{"unterminated OSC ends at the line", "a\x1b]0;title\nvisible", "a\nvisible"},
		{"C0 controls", "a\x00b\rc\x08d\x7fe\x07f", "abcdef"},
		{"bidi override", "pay \u202eredaol\u202c now \u2066x\u2069", "pay redaol now x"},
		{"zero-width marks stay", "a\u200eb", "a\u200eb"},
		{"invalid UTF-8", "a\xffb\xc2", "a\ufffdb\ufffd"},
		{"ESC inside OSC starts a CSI", "a\x1b]0;x\x1b[31mb", "ab"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("%s: String(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
		// The same through a Writer, split at every byte.
		for cut := 0; cut <= len(tt.in); cut++ {
			var b bytes.Buffer
			w := NewWriter(&b)
			w.Write([]byte(tt.in[:cut]))
			w.Write([]byte(tt.in[cut:]))
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("%s split at %d: %q, want %q", tt.name, cut, b.String(), tt.want)
			}
		}
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("no space left on device") }

func TestWriterKeepsTheError(t *testing.T) {
	w := NewWriter(failWriter{})
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("no error from a failing writer")
	}
	if _, err := w.Write([]byte("y")); err == nil || w.Err() == nil || w.Flush() == nil {
		t.Fatal("the first error is not kept")
	}
}

// safe checks the property every output has: no byte a terminal acts on.
func safe(t *testing.T, in, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("invalid UTF-8 from %q: %q", in, s)
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || drop(r) {
			t.Fatalf("control %U left in %q (from %q)", r, s, in)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("a\x1b]52;c;ZXZpbA==\x07b", 3)
	f.Add("\u009b2J\xe2\x80\xae", 1)
	f.Add("\xe2\x82A", 1)
	f.Fuzz(func(t *testing.T, in string, cut int) {
		s := String(in)
		safe(t, in, s)
		// Every rune out comes from at least one byte in.
		if utf8.RuneCountInString(s) > len(in) {
			t.Fatalf("output longer than the input: %q -> %q", in, s)
		}
		if cut < 0 {
			cut = -cut
		}
		if len(in) > 0 {
			cut %= len(in) + 1
		} else {
			cut = 0
		}
		var b bytes.Buffer
		w := NewWriter(&b)
		w.Write([]byte(in[:cut]))
		w.Write([]byte(in[cut:]))
		w.Flush()
		if b.String() != s {
			t.Fatalf("split at %d: %q, String gives %q", cut, b.String(), s)
		}
	})
}

func TestJSONWriter(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", `{"a":"Wi-Fi 设置"}`, `{"a":"Wi-Fi 设置"}`},
		{"C1 CSI", "{\"a\":\"x\u009b2Jy\"}", `{"a":"x\u009b2Jy"}`},
		{"bidi", "[\"pay \u202eredaol\u202c \u2066x\u2069\"]", `["pay \u202eredaol\u202c \u2066x\u2069"]`},
		{"zero-width marks stay", "\"a\u200eb\"", "\"a\u200eb\""},
	}
	for _, tt := range tests {
		for cut := 0; cut <= len(tt.in); cut++ {
			var b bytes.Buffer
			w := NewJSONWriter(&b)
			w.Write([]byte(tt.in[:cut]))
			w.Write([]byte(tt.in[cut:]))
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("%s cut at %d: %q, want %q", tt.name, cut, b.String(), tt.want)
			}
		}
	}
}

func TestJSONWriterKeepsTheError(t *testing.T) {
	w := NewJSONWriter(failWriter{})
	if _, err := w.Write([]byte(`"x"`)); err == nil {
		t.Fatal("Write onto a failing writer succeeded")
	}
	if _, err := w.Write([]byte(`"y"`)); err == nil || w.Flush() == nil {
		t.Fatal("the first error was not kept")
	}
}

// FuzzJSONWriter checks that what encoding/json writes for any string
// reads back as the same string through a JSONWriter and carries no
// character the terminal filter drops.
func FuzzJSONWriter(f *testing.F) {
	for _, s := range []string{"", "a\u0085b", "\u202e\u2069", "设置", "\x1b[2J"} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, cut int) {
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		cut = min(max(cut, 0), len(js))
		var b bytes.Buffer
		w := NewJSONWriter(&b)
		w.Write(js[:cut])
		w.Write(js[cut:])
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(b.Bytes(), &back); err != nil {
			t.Fatalf("%q is not JSON: %v", b.String(), err)
		}
		var want string
		json.Unmarshal(js, &want)
		if back != want {
			t.Fatalf("read back %q, want %q", back, want)
		}
		for _, r := range b.String() {
			if drop(r) {
				t.Fatalf("%q keeps %U", b.String(), r)
			}
		}
	})
}

// TestLine: one line of safe text: String's filter, and the line breaks
// and tabs that would break a table or a progress line as spaces.
func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                       "plain",
		"two\nlines\tand a tab":       "two lines and a tab",
		"bidi \u202eevil\u202c here":  "bidi evil here",
		"\x1b[31mred\x1b[0m \u009b2J": "red ",
		"cr\r\nlf":                    "cr lf",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}
