package spark

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestRunPieces: every piece runs exactly once whatever the number of
// workers; the first error of do stops the rest and is returned; a
// cancelled context runs nothing and returns its error.
func TestRunPieces(t *testing.T) {
	mv := []moved{{w: &Weight{Rows: 100, rowBytes: 1}}, {w: &Weight{Rows: 7, rowBytes: 1 << 20}}}
	pieces := cut(mv, 8)
	for _, p := range pieces {
		if p.r0%8 != 0 || p.r1 <= p.r0 {
			t.Fatalf("piece %+v is not a whole multiple of 8 rows", p)
		}
	}
	for _, workers := range []int{0, 1, 3, 100} {
		ran := make([]atomic.Int32, len(pieces))
		idx := map[[3]int]int{}
		for i, p := range pieces {
			idx[[3]int{p.i, p.r0, p.r1}] = i
		}
		if err := runPieces(context.Background(), workers, pieces, func(p piece) error {
			ran[idx[[3]int{p.i, p.r0, p.r1}]].Add(1)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range ran {
			if n := ran[i].Load(); n != 1 {
				t.Fatalf("%d workers: piece %d ran %d times", workers, i, n)
			}
		}
	}

	boom := errors.New("boom")
	var n atomic.Int32
	err := runPieces(context.Background(), 1, pieces, func(piece) error {
		if n.Add(1) == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n.Load() != 2 {
		t.Fatalf("after an error: %v, %d pieces run (want boom, 2)", err, n.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.Store(0)
	err = runPieces(ctx, 2, pieces, func(piece) error { n.Add(1); return nil })
	if !errors.Is(err, context.Canceled) || n.Load() != 0 {
		t.Fatalf("cancelled: %v, %d pieces run (want context.Canceled, 0)", err, n.Load())
	}
}
