package shell

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// safeWord matches words the device shell (mksh) reads literally without
// quotes: no metacharacters, no globbing, no expansion, no tilde.
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_./:,+%@=-]+$`)

// Quote returns s as exactly one literal word for the device's /system/bin/sh.
// Words of plain characters stay as they are; anything else is wrapped in
// single quotes, inside which sh gives no character a meaning; each single
// quote in s closes the quoting, adds an escaped quote and reopens it.
// s must not contain NUL (a shell command line cannot carry it);
// ShellLine checks that.
func Quote(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ErrNUL reports a NUL byte in something meant for the device shell.
var ErrNUL = errors.New("contains a NUL byte, which no shell command can carry")

// ShellLine joins argv into a command line for the device shell, quoting
// every word with Quote.
func ShellLine(argv ...string) (string, error) {
	var b strings.Builder
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("argument %d %w", i, ErrNUL)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Quote(a))
	}
	return b.String(), nil
}

// packageRE is what an Android package name looks like.
var packageRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*(\.[a-zA-Z0-9_]+)+$`)

// IsPackageName reports whether s is a syntactically valid package name.
func IsPackageName(s string) bool { return len(s) <= 255 && packageRE.MatchString(s) }

// ErrNeedsIME reports text that `input text` cannot type.
var ErrNeedsIME = errors.New("`input text` cannot type this text")

// InputTextArg returns the argument for `input text` (before shell quoting)
// that makes the phone type exactly text: spaces become %s, which input
// decodes back. It fails with ErrNeedsIME for text input cannot carry:
// anything outside printable ASCII (non-ASCII, newline, tab, control
// characters) and a literal "%s", which input would turn into a space and
// offers no escape for.
func InputTextArg(text string) (string, error) {
	for i, r := range text {
		if r < 0x20 || r > 0x7e {
			return "", fmt.Errorf("%w: it has %q at offset %d", ErrNeedsIME, r, i)
		}
	}
	if strings.Contains(text, "%s") {
		return "", fmt.Errorf("%w: it has \"%%s\", which input turns into a space", ErrNeedsIME)
	}
	return strings.ReplaceAll(text, " ", "%s"), nil
}

// DecodeInputText does what Android's `input text` does to its argument:
// each "%s" becomes a space (Input.java sendText). The fake device uses it,
// and tests use it to check InputTextArg round-trips.
func DecodeInputText(arg string) string {
	b := []byte(arg)
	var out []byte
	esc := false
	for _, c := range b {
		if esc {
			esc = false
			if c == 's' {
				out[len(out)-1] = ' '
				continue
			}
		}
		out = append(out, c)
		if c == '%' {
			esc = true
		}
	}
	return string(out)
}
