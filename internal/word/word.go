// Package word matches whole words in labels and screen lines, the one
// rule for the sensitive-label policy (loop) and the script backend's
// element kinds: "Pay" is in "Pay now" but not in "Payment".
package word

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// In reports whether w occurs in s as a whole word, ignoring case: with no
// letter or digit right before or after it. An empty w is in nothing.
func In(s, w string) bool {
	if w == "" {
		return false
	}
	s, w = strings.ToLower(s), strings.ToLower(w)
	for off := 0; off <= len(s); {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(w)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (start == 0 || !isWordRune(before)) && (end == len(s) || !isWordRune(after)) {
			return true
		}
		off = start + 1
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
