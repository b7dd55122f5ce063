package tokenizer

// GPT-2 byte-level encoding: every byte maps to one printable code point so
// that BPE can work on strings. Printable Latin-1 bytes map to themselves,
// the others to U+0100 and up, in byte order.
var byteToRune, runeToByte = byteTables()

// byteTables builds the table and its inverse, which holds byte + 1 for
// each rune of the table and 0 elsewhere.
func byteTables() (toRune [256]rune, toByte [324]int16) {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			toRune[b] = rune(b)
		} else {
			toRune[b] = rune(256 + n)
			n++
		}
		toByte[toRune[b]] = int16(b + 1)
	}
	return toRune, toByte
}

// ByteRune returns the code point that stands for byte b in a byte-level
// vocabulary (GPT-2's bytes_to_unicode).
func ByteRune(b byte) rune { return byteToRune[b] }

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
