package tokenizer

import "unicode/utf8"

// Decoder turns a stream of token ids into text without ever splitting a
// UTF-8 character across the pieces it returns: bytes of a character that is
// not complete yet are held back until the tokens completing it arrive.
// Concatenating every Add result and the final Flush gives Decode of all ids.
type Decoder struct {
	t       *Tokenizer
	pending []byte
}

// NewDecoder returns a streaming decoder.
func (t *Tokenizer) NewDecoder() *Decoder { return &Decoder{t: t} }

// Add decodes one more token and returns the text that is now complete,
// possibly "".
func (d *Decoder) Add(id int) string {
	d.pending = append(d.pending, d.t.Piece(id)...)
	cut := completePrefix(d.pending)
	out := string(d.pending[:cut])
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

// Flush returns whatever is held back (the start of a character the stream
// never completed) and resets the decoder.
func (d *Decoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns the length of b without a trailing incomplete UTF-8
// sequence: a lead byte followed by fewer continuation bytes than it needs.
// Invalid bytes are not held: waiting could never complete them.
func completePrefix(b []byte) int {
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back for the lead
		}
		need := 0
		switch {
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		}
		if need > back && !utf8.FullRune(b[len(b)-back:]) {
			return len(b) - back
		}
		return len(b)
	}
	return len(b)
}
