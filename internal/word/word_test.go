package word

import "testing"

func TestIn(t *testing.T) {
	tests := []struct {
		s, w string
		want bool
	}{
		{"Pay", "pay", true},
		{"Pay now", "Pay", true},
		{"Payment", "Pay", false},
		{"Repay", "pay", false},
		{"Send money", "send", true},
		{"Resend code", "send", false},
		{"Delete, permanently", "delete", true},
		{"Pay2", "pay", false},
		{"Buy · Buy now", "buy", true},
		{"Repay then pay", "pay", true}, // a later whole match counts
		{"ÄPay", "pay", false},          // letters beyond ASCII are letters
		{"switch Wi-Fi", "switch", true},
		{"", "pay", false},
		{"Pay", "", false},
	}
	for _, tt := range tests {
		if got := In(tt.s, tt.w); got != tt.want {
			t.Errorf("In(%q, %q) = %v, want %v", tt.s, tt.w, got, tt.want)
		}
	}
}
