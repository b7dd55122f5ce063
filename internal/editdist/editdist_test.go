package editdist

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"settings", "settings", 0}, {"", "abc", 3}, {"abc", "", 3},
		{"setings", "settings", 1}, {"kitten", "sitting", 3}, {"设置", "设定", 1}, {"Clock", "clock", 1},
	} {
		if got := Levenshtein(tc.a, tc.b); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Levenshtein(tc.b, tc.a); got != tc.want {
			t.Errorf("not symmetric for %q, %q", tc.a, tc.b)
		}
	}
}
