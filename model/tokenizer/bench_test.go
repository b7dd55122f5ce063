package tokenizer

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// benchText builds a prompt like the agent's: a chat template around a
// screen listing, with mixed scripts, long enough for about 4,000 tokens of
// the rich test vocabulary.
func benchText(tok *Tokenizer, tokens int) string {
	var b strings.Builder
	b.WriteString("<｜start▁of▁sentence｜><|System|>\nyou are a helpful assistant.<｜end▁of▁sentence｜><｜start▁of▁sentence｜><|User|>")
	lines := []string{
		"[%d] Button \"Wi-Fi\" (clickable, enabled) bounds=[0,240][1080,400]\n",
		"[%d] TextView \"Network & internet\" — 设置 ネットワーク 12:45 PM\n",
		"[%d] Switch \"Bluetooth\" checked=false focusable=true\n",
		"    func (d *Device) Tap(ctx context.Context, x, y int) error { return nil }\n",
	}
	for i := 0; len(tok.Encode(b.String(), true)) < tokens; i++ {
		l := lines[i%len(lines)]
		l = strings.Replace(l, "%d", strings.Repeat("1", 1+i%3), 1)
		b.WriteString(l)
	}
	b.WriteString("<｜end▁of▁sentence｜><｜start▁of▁sentence｜><|Bot|><think>")
	return b.String()
}

// BenchmarkEncode encodes a 4,000-token prompt with the word cache warm (the
// agent's case: each step's prompt repeats most words of the last).
func BenchmarkEncode(b *testing.B) {
	tok := loadTok(b, "rich-vocab")
	text := benchText(tok, 4000)
	n := len(tok.Encode(text, true))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tok.Encode(text, true)
	}
	b.ReportMetric(float64(n), "tokens/op")
}

// BenchmarkEncodeCold clears the word cache before each encoding, so every
// word goes through BPE.
func BenchmarkEncodeCold(b *testing.B) {
	tok := loadTok(b, "rich-vocab")
	text := benchText(tok, 4000)
	n := len(tok.Encode(text, true))
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		tok.mu.Lock()
		clear(tok.cache)
		tok.mu.Unlock()
		tok.Encode(text, true)
	}
	b.ReportMetric(float64(n), "tokens/op")
}

func BenchmarkDecodeStream(b *testing.B) {
	tok := loadTok(b, "rich-vocab")
	ids := tok.Encode(benchText(tok, 4000), true)
	b.ResetTimer()
	for range b.N {
		d := tok.NewDecoder()
		for _, id := range ids {
			d.Add(id)
		}
	}
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "a  b\t\n c  ", "你好世界123", "<think>x</think>", "👨‍👩‍👧 e\u0301", "\xff\xe4\xbd", "\u00a0\u3000 x"} {
		f.Add(s)
	}
	tok := loadTok(f, "tiny-vocab")
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s, true)
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		got := tok.Decode(ids)
		if utf8.ValidString(s) {
			if got != s {
				t.Fatalf("Decode(Encode(%q)) = %q", s, got)
			}
		} else if !utf8.ValidString(got) {
			t.Fatalf("Decode(Encode(%q)) = %q is not valid UTF-8", s, got)
		}
	})
}

// largeVocab builds a vocabulary the size of Spark's (131,072 tokens) from
// the rich test vocabulary: its tokens and merges, filler merges of byte
// pairs, and 1,000 reserved control tokens, to measure loading and the cost
// of many special tokens.
func largeVocab(b *testing.B) Vocab {
	tok := loadTok(b, "rich-vocab")
	v := Vocab{BOS: 0, EOS: 1, Pre: PreSpark}
	for id := 0; id < tok.VocabSize(); id++ {
		v.Tokens = append(v.Tokens, tok.Token(id))
		v.Types = append(v.Types, tok.Type(id))
	}
	seen := map[string]bool{}
	for _, s := range v.Tokens {
		seen[s] = true
	}
	for i := 0; len(v.Tokens) < 130072; i++ {
		l, r := string(byteToRune[i%256]), string(byteToRune[(i/256)%256])+string(byteToRune[(i/65536)%256])
		if seen[l+r] {
			continue
		}
		seen[l+r] = true
		v.Merges = append(v.Merges, l+" "+r)
		v.Tokens = append(v.Tokens, l+r)
		v.Types = append(v.Types, TypeNormal)
	}
	for i := 0; len(v.Tokens) < 131072; i++ {
		v.Tokens = append(v.Tokens, fmt.Sprintf("<|reserved_special_token_%d|>", i))
		v.Types = append(v.Types, TypeControl)
	}
	return v
}

func BenchmarkNewLarge(b *testing.B) {
	v := largeVocab(b)
	b.ResetTimer()
	for range b.N {
		if _, err := New(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeLarge encodes the 4,000-token prompt with the large
// vocabulary (its 1,000 reserved control tokens are searched for too).
func BenchmarkEncodeLarge(b *testing.B) {
	tok, err := New(largeVocab(b))
	if err != nil {
		b.Fatal(err)
	}
	text := benchText(loadTok(b, "rich-vocab"), 4000)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		tok.Encode(text, true)
	}
}
