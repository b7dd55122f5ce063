package spark

import (
	"context"
	"fmt"
	"testing"
)

// A state saved at a prefix and restored after the rings have moved on
// far past it (and after a Reset) resumes exactly like the engine that
// computed the prefix, for both cache types and after an Encode/Decode
// round trip.
func TestSaveRestore(t *testing.T) {
	m := randomModel(t, "gqa", "q8_0", 5)
	W := m.Config.Window
	prefix := randomTokens(3*W+3, m.Config.Vocab, 1)
	rest := randomTokens(W+2, m.Config.Vocab, 2)
	long := randomTokens(6*W, m.Config.Vocab, 3)
	for _, kv := range []KVType{KVF32, KVF16} {
		ctx := context.Background()
		ref, _ := NewEngine(m, Options{KV: kv, slack: 2})
		if err := ref.Prefill(ctx, prefix); err != nil {
			t.Fatal(err)
		}
		want, err := ref.Eval(ctx, rest, LogitsAll)
		if err != nil {
			t.Fatal(err)
		}

		e, _ := NewEngine(m, Options{KV: kv, slack: 2})
		if err := e.Prefill(ctx, prefix); err != nil {
			t.Fatal(err)
		}
		st := e.Save()
		// A long turn overwrites every ring slot of the prefix.
		if _, err := e.Eval(ctx, long, LogitsLast); err != nil {
			t.Fatal(err)
		}
		if n := e.Truncate(len(prefix)); n != 0 {
			t.Fatalf("Truncate kept %d positions the rings no longer hold", n)
		}
		for round, s := range []*State{st, decodeOK(t, st.Encode())} {
			if err := e.Restore(s); err != nil {
				t.Fatal(err)
			}
			// Positions before the restored window are not claimed.
			if n := e.Truncate(len(prefix) - W); n != 0 {
				t.Fatalf("%s: Truncate below the restored window kept %d", kv, n)
			}
			if err := e.Restore(s); err != nil {
				t.Fatal(err)
			}
			got, err := e.Eval(ctx, rest, LogitsAll)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff32(got, want); d != 0 {
				t.Errorf("%s round %d: restored engine differs by %g", kv, round, d)
			}
		}
		other, _ := NewEngine(m, Options{KV: 1 - kv})
		if err := other.Restore(st); err == nil {
			t.Errorf("a %s state was restored into a %s engine", kv, 1-kv)
		}
	}
}

func decodeOK(t *testing.T, b []byte) *State {
	t.Helper()
	st, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDecodeStateRejectsDamage(t *testing.T) {
	m := randomModel(t, "gqa", "q8_0", 5)
	e, _ := NewEngine(m, Options{})
	if err := e.Prefill(context.Background(), randomTokens(20, m.Config.Vocab, 1)); err != nil {
		t.Fatal(err)
	}
	b := e.Save().Encode()
	for _, n := range []int{0, 5, 12, 40, len(b) - 1} {
		if _, err := DecodeState(b[:n]); err == nil {
			t.Errorf("a state cut to %d of %d bytes decoded", n, len(b))
		}
	}
	if _, err := DecodeState(append(b, 0)); err == nil {
		t.Error("trailing bytes accepted")
	}
}

func FuzzDecodeState(f *testing.F) {
	m := randomModel(f, "gqa", "q8_0", 5)
	e, _ := NewEngine(m, Options{})
	if err := e.Prefill(context.Background(), randomTokens(9, m.Config.Vocab, 1)); err != nil {
		f.Fatal(err)
	}
	f.Add(e.Save().Encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeState(b)
		if err != nil {
			return
		}
		// Whatever decodes is checked against the engine before use.
		e2, _ := NewEngine(m, Options{})
		_ = e2.Restore(st)
	})
}

// attnEngine is an engine with just what attention reads: the 1.7B's
// shape, one full-attention layer holding n positions of random keys and
// values, one token's queries.
func attnEngine(b *testing.B, kv KVType, n int) *engine {
	c, _ := Preset("1.7b")
	e := &engine{c: c, opts: Options{KV: kv}, ring: c.Window + 256, maxCtx: 1 << 20}
	e.c.Layers, e.c.Sliding = 1, []bool{false}
	s := e.newSeq()
	s.ensureKV(0, n)
	buf := &s.kv[0].kvBuf
	rng := randomTokens(n*c.KVDim()*2, 1000, 9)
	val := func(i int) float32 { return float32(rng[i%len(rng)]-500) / 500 }
	x := make([]float32, c.HeadDim)
	e.enc16 = [][]byte{make([]byte, 2*c.HeadDim)}
	for p := range n {
		for h := range c.KVHeads {
			for i := range x {
				x[i] = val(p*7 + h*13 + i)
			}
			if kv == KVF16 {
				e.storeF16(0, buf, p, h, false, x)
				e.storeF16(0, buf, p, h, true, x)
			} else {
				copy(buf.k[p*c.KVDim()+h*c.HeadDim:], x)
				copy(buf.v[p*c.KVDim()+h*c.HeadDim:], x)
			}
		}
	}
	s.tokens = make([]int, n-1)
	e.qkv = make([]float32, c.QKVRows())
	for i := range e.qkv {
		e.qkv[i] = val(i)
	}
	e.att = make([]float32, c.QDim())
	e.gate = make([]float32, c.Heads)
	g := c.Heads / c.KVHeads
	e.scores = [][]float32{make([]float32, n)}
	e.q16 = [][]float32{make([]float32, g*c.HeadDim)}
	e.gsc = [][]float32{make([]float32, g*n)}
	e.runs = make([][]kvRun, 1)
	e.vgather = make([][]byte, 1)
	e.cur.b = 1
	e.cur.spans = []span{{s: s, n: 1, p0: n - 1}}
	e.rowSpan = []int32{0}
	e.taskEnd = []int{c.KVHeads}
	return e
}

// One token's attention over n positions of one full layer, all heads.
func BenchmarkAttention(b *testing.B) {
	for _, n := range []int{512, 2048} {
		for _, kv := range []KVType{KVF32, KVF16} {
			b.Run(fmt.Sprintf("%s/n=%d", kv, n), func(b *testing.B) {
				e := attnEngine(b, kv, n)
				tasks := e.c.Heads
				if kv == KVF16 {
					tasks = e.c.KVHeads
				}
				for b.Loop() {
					for task := range tasks {
						e.doAttn(0, task)
					}
				}
			})
		}
	}
}
