package spark

import (
	"context"
	"testing"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
)

// A background repack changes nothing a caller can see but the speed: an
// engine that keeps decoding while the matrices are swapped in computes
// what the file layout computes (exactly with the generic kernels, to float
// summation order with the assembly ones), and the memory stays usable
// after Close.
func TestBackgroundRepack(t *testing.T) {
	best := kernels.ISA()
	defer kernels.SetISA(best)
	for _, isa := range []string{"generic", best} {
		if err := kernels.SetISA(isa); err != nil {
			t.Fatal(err)
		}
		tol0, tol := 0.0, 0.0
		if isa != "generic" {
			tol0, tol = 1e-4, 0.5 // as TestBatchingIsExact
		}
		for _, typ := range []string{"q4_k_m", "q6_k", "q8_0"} {
			m1 := randomModel(t, "gqa", typ, 7)
			toks := randomTokens(24, m1.Config.Vocab, 8)
			V := m1.Config.Vocab
			e1, _ := NewEngine(m1, Options{Threads: 2})
			want := evalAll(t, e1, toks)
			e1.Close()

			m2 := randomModel(t, "gqa", typ, 7)
			// In the Q4_K_M file only Q4_K is interleaved: the Q6_K
			// matrices (the tied embedding among them) are copied as they
			// are.
			x8 := m2.canInterleave
			if typ == "q4_k_m" {
				x8 = func(w *Weight) bool { return m2.canInterleave(w) && w.Type == quant.Q4_K }
			}
			embed := &m2.Embed.Data[0]
			n, err := m2.startRepack(x8, true, 3, nil)
			if err != nil || n < m2.WeightBytes()/2 {
				t.Fatalf("%s: start repack: %d bytes, %v", typ, n, err)
			}
			e2, _ := NewEngine(m2, Options{Threads: 2})
			for i, tok := range toks {
				if i == len(toks)/2 {
					if err := m2.WaitRepack(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				got, err := e2.Eval(context.Background(), []int{tok}, LogitsLast)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxDiff32(got, want[i*V:(i+1)*V]); d > tol || (i == 0 && d > tol0) {
					t.Fatalf("%s %s: position %d differs by %g", isa, typ, i, d)
				}
			}
			if want := typ != "q4_k_m"; m2.Embed.x8 != want || m2.Output.x8 != want || &m2.Embed.Data[0] == embed || &m2.Output.Data[0] != &m2.Embed.Data[0] {
				t.Errorf("%s: embedding not moved (interleaved: %v) or the tied head not with it", typ, m2.Embed.x8)
			}
			if !m2.Layers[3].FFNUp.x8 {
				t.Errorf("%s: matrices not swapped in after the wait and an Eval", typ)
			}
			if b, took := m2.RepackStats(); b != n || took <= 0 {
				t.Errorf("%s: RepackStats = %d bytes in %v, want %d bytes and a duration", typ, b, took, n)
			}
			// An embedding row read back from the interleaved layout.
			if got, want := m2.Embed.Row(5), m1.Embed.Row(5); string(got) != string(want) {
				t.Errorf("%s: repacked embedding row differs", typ)
			}
			e2.Close()
			if err := m2.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	}
}

// Closing a model while it is being repacked stops the work cleanly,
// whether the copy waits for its start or runs, and Preload refuses to run
// over a repack.
func TestCloseDuringRepack(t *testing.T) {
	for _, started := range []bool{false, true} {
		m := randomModel(t, "gqa", "q4_k_m", 9)
		if _, err := m.startRepack(m.canInterleave, true, 2, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Preload(); err == nil {
			t.Error("Preload during a repack succeeded")
		}
		rp := m.rp
		if started {
			m.kickRepack()
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-rp.done:
		default:
			t.Errorf("started=%v: the repack goroutine still runs after Close", started)
		}
		if m.rp != nil {
			t.Errorf("started=%v: Close left the repack state behind", started)
		}
	}
}

// A long first prompt on a level whose batched kernels prefer the
// interleaved layout waits for the repack and runs on it; a short one does
// not wait.
func TestLongPromptRepacksFirst(t *testing.T) {
	best := kernels.ISA()
	defer kernels.SetISA(best)
	if err := kernels.SetISA("avx2"); err != nil {
		t.Skip("no avx2 level on this CPU")
	}
	if !kernels.PlainBatchSlower() {
		t.Fatal("avx2: PlainBatchSlower is false, want true")
	}
	for _, n := range []int{repackFirstTokens, 8} {
		m := randomModel(t, "gqa", "q4_k_m", 7)
		if _, err := m.startRepack(func(w *Weight) bool { return m.canInterleave(w) && w.Type == quant.Q4_K }, true, 1, nil); err != nil {
			t.Fatal(err)
		}
		e, _ := NewEngine(m, Options{Threads: 2})
		if _, err := e.Eval(context.Background(), randomTokens(n, m.Config.Vocab, 9), LogitsLast); err != nil {
			t.Fatal(err)
		}
		x8 := m.Layers[0].FFNUp.x8
		if n >= repackFirstTokens && !x8 {
			t.Errorf("%d-token prompt: ran before the repack", n)
		}
		if n < repackFirstTokens && x8 {
			t.Errorf("%d-token prompt: waited for the repack", n)
		}
		e.Close()
		m.Close()
	}
}
