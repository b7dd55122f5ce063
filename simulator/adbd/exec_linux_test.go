package adbd

import "testing"

func TestParseWindowSize(t *testing.T) {
	for _, tt := range []struct {
		in         string
		rows, cols int
		ok         bool
	}{
		{"40x120,0x0\x00", 40, 120, true},
		{"24x80", 24, 80, true},
		{"0x80,0x0\x00", 0, 0, false},
		{"axb,0x0", 0, 0, false},
		{"99999x1,0x0", 0, 0, false},
		{"", 0, 0, false},
	} {
		r, c, ok := parseWindowSize(tt.in)
		if r != tt.rows || c != tt.cols || ok != tt.ok {
			t.Errorf("parseWindowSize(%q) = %d %d %v", tt.in, r, c, ok)
		}
	}
}
