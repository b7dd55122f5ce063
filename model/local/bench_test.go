package local

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/gguf"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/model/sample"
	"github.com/droidgo/droidgo/model/tokenizer"
)

// bigVocabBackend is a Backend with only what the constraint uses, over a
// 131072-token vocabulary (Spark's size): the rich test vocabulary (with
// Spark's special tokens) padded with random 1-8 byte tokens of mostly
// ASCII text.
func bigVocabBackend(tb testing.TB) *Backend {
	tb.Helper()
	path := localtest.Model(tb, 1)
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	small, err := tokenizer.FromGGUF(f)
	if err != nil {
		tb.Fatal(err)
	}
	const V = 131072
	v := tokenizer.Vocab{BOS: small.BOS(), EOS: small.EOS(), Pre: tokenizer.PreSpark}
	seen := map[string]bool{}
	for id := 0; id < small.VocabSize(); id++ {
		v.Tokens = append(v.Tokens, small.Token(id))
		v.Types = append(v.Types, small.Type(id))
		seen[small.Token(id)] = true
	}
	byteLevel := map[byte]string{}
	for b := 0; b < 256; b++ {
		// The single-byte tokens of the rich vocabulary, by their byte.
		for id := 0; id < small.VocabSize(); id++ {
			if p := small.Piece(id); len(p) == 1 && p[0] == byte(b) && !small.IsSpecial(id) {
				byteLevel[byte(b)] = small.Token(id)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,:;<>/\n"
	for len(v.Tokens) < V {
		n := 1 + rng.IntN(8)
		s := ""
		for i := 0; i < n; i++ {
			var c byte
			if rng.IntN(20) == 0 {
				c = byte(128 + rng.IntN(128))
			} else {
				c = alphabet[rng.IntN(len(alphabet))]
			}
			if c >= '0' && c <= '9' && n > 1 {
				// Spark's pre-tokenizer splits digits one by one, so
				// digits are single-character tokens only.
				c = 'x'
			}
			s += byteLevel[c]
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, tokenizer.TypeNormal)
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		tb.Fatal(err)
	}
	b := &Backend{tok: tok, eos: tok.EOS(), first: make([]int16, V), sorted: sortedByPiece(tok)}
	for id := range b.first {
		b.first[id] = -1
		if p := tok.Piece(id); p != "" {
			b.first[id] = int16(p[0])
		}
	}
	return b
}

// BenchmarkConstrainedPick measures what the constraint adds to one token
// over Spark's 131072-token vocabulary: updating the answer state (the
// first-byte table), masking the logits, and the lazy search for an
// allowed token. Logits are random (no preference for valid tokens: a
// pessimistic case for the lazy search); the unconstrained pick is the
// baseline.
func BenchmarkConstrainedPick(b *testing.B) {
	bk := bigVocabBackend(b)
	valid := make([]int, 40)
	for i := range valid {
		valid[i] = i
	}
	rng := rand.New(rand.NewPCG(2, 2))
	flat := make([]float32, 131072)
	for i := range flat {
		flat[i] = float32(rng.NormFloat64() * 3)
	}
	// Peaked: like a trained model, a few tokens stand far above the rest
	// (random ones, so mostly not valid continuations).
	peaked := append([]float32(nil), flat...)
	for r := 1; r <= 50; r++ {
		peaked[rng.IntN(len(peaked))] += 20 / float32(r)
	}
	work := make([]float32, len(flat))
	states := []struct{ name, answer string }{
		{"start", ""},
		{"name", "<tool_call>"},
		{"index", "<tool_call>tap<arg_key>index</arg_key><arg_value>"},
		{"enum", "<tool_call>press_key<arg_key>key</arg_key><arg_value>"},
		{"text", "<tool_call>open_app<arg_key>name</arg_key><arg_value>Sett"},
	}
	samplings := []struct {
		name string
		s    model.Sampling
	}{{"greedy", model.Sampling{}}, {"T1-p0.95", model.Sampling{Temperature: 1, TopP: 0.95, Seed: 1}}}
	for _, sm := range samplings {
		for _, lg := range []struct {
			name   string
			logits []float32
		}{{"flat", flat}, {"peaked", peaked}} {
			logits := lg.logits
			b.Run(fmt.Sprintf("%s/unconstrained/%s", lg.name, sm.name), func(b *testing.B) {
				s := sample.New(sm.s)
				for i := 0; i < b.N; i++ {
					copy(work, logits)
					if _, err := s.Pick(work, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, st := range states {
				b.Run(fmt.Sprintf("%s/%s/%s", lg.name, st.name, sm.name), func(b *testing.B) {
					s := sample.New(sm.s)
					k := newConstraint(bk, action.Tools, valid)
					k.answer = []byte(st.answer)
					for i := 0; i < b.N; i++ {
						copy(work, logits)
						k.update()
						if _, err := k.pick(s, work, false); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
