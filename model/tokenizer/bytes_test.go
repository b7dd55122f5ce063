package tokenizer

import (
	"bytes"
	"testing"
)

func TestByteRune(t *testing.T) {
	for _, tc := range []struct {
		b    byte
		want rune
	}{
		{'A', 'A'}, {'!', '!'}, {'~', '~'}, {0xA1, 0xA1}, {0xFF, 0xFF},
		{0x00, 0x100}, {' ', 'Ġ'}, {'\n', 'Ċ'}, {0x7F, 0x121}, {0xAD, 0x143},
	} {
		if got := ByteRune(tc.b); got != tc.want {
			t.Errorf("ByteRune(%#x) = %U, want %U", tc.b, got, tc.want)
		}
	}
	var all []byte
	var text []rune
	for b := 0; b < 256; b++ {
		all = append(all, byte(b))
		text = append(text, ByteRune(byte(b)))
	}
	if got := unByteLevel(string(text)); !bytes.Equal(got, all) {
		t.Errorf("unByteLevel(ByteRune of every byte) = %x, want %x", got, all)
	}
}
