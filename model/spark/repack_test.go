package spark

import (
	"context"
	"testing"

	"github.com/droidgo/droidgo/model/kernels"
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
		for _, typ := range []string{"q4_k_m", "q6_k"} {
			m1 := randomModel(t, "gqa", typ, 7)
			toks := randomTokens(24, m1.Config.Vocab, 8)
			V := m1.Config.Vocab
			e1, _ := NewEngine(m1, Options{Threads: 2})
			want := evalAll(t, e1, toks)
			e1.Close()

			m2 := randomModel(t, "gqa", typ, 7)
			n, err := m2.startRepack(m2.canInterleave)
			if err != nil || n == 0 {
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
			if !m2.Embed.x8 || !m2.Output.x8 || !m2.Layers[3].FFNDown.x8 {
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

// Closing a model while it is being repacked stops the work cleanly, and
// Preload refuses to run over a repack.
func TestCloseDuringRepack(t *testing.T) {
	m := randomModel(t, "gqa", "q4_k_m", 9)
	if _, err := m.startRepack(m.canInterleave); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Preload(); err == nil {
		t.Error("Preload during a repack succeeded")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
