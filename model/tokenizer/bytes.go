package tokenizer

// GPT-2 byte-level encoding: every byte maps to one printable code point so
// that BPE can work on strings. Printable Latin-1 bytes map to themselves,
// the others to U+0100 and up, in byte order.
var (
	byteToRune [256]rune
	runeToByte [324]int16 // byte + 1 for each rune of the table, 0 elsewhere
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = int16(b + 1)
	}
}

// unByteLevel decodes byte-level text to bytes. Code points outside the
// table (which only a malformed vocabulary has) are kept as their UTF-8
// bytes.
func unByteLevel(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r >= 0 && int(r) < len(runeToByte) && runeToByte[r] != 0 {
			out = append(out, byte(runeToByte[r]-1))
		} else {
			out = append(out, string(r)...)
		}
	}
	return out
}
