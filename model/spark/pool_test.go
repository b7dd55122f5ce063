package spark

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestCountPhysicalCores(t *testing.T) {
	cases := []struct {
		name, text string
		want       int
	}{
		{"smt", "processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 1\nphysical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 2\nphysical id\t: 0\ncore id\t\t: 1\n\nprocessor\t: 3\nphysical id\t: 0\ncore id\t\t: 1\n", 2},
		{"two sockets", "physical id : 0\ncore id : 0\n\nphysical id : 1\ncore id : 0\n", 2},
		{"no topology (arm64)", "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n", 0},
		{"no trailing blank line", "physical id : 0\ncore id : 3", 1},
		{"empty", "", 0},
	}
	dir := t.TempDir()
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := countPhysicalCores(p); got != c.want {
			t.Errorf("%s: got %d cores, want %d", c.name, got, c.want)
		}
	}
	if got := countPhysicalCores(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("missing file: got %d", got)
	}
	if n := DefaultThreads(); n < 1 {
		t.Errorf("DefaultThreads() = %d", n)
	}
}

// Many dispatches in a row with more workers than chunks and more chunks
// than workers: every chunk runs exactly once per dispatch.
func TestPoolRunsEveryChunkOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 5} {
		p := newPool(threads, nil)
		e := &engine{pool: p}
		for round := 0; round < 300; round++ {
			n := round % 7
			e.cur.counts = make([]int32, n)
			e.dispatch(stepTest, n)
			for i, c := range e.cur.counts {
				if c != 1 {
					t.Fatalf("threads %d round %d: chunk %d ran %d times", threads, round, i, c)
				}
			}
		}
		p.stop()
	}
}

// Decoding a token allocates nothing once the buffers have grown (the
// logits buffer is handed back through EvalTo).
func TestDecodeDoesNotAllocate(t *testing.T) {
	for _, typ := range []string{"q4_k_m", "q8_0"} {
		preset := "q"
		if typ == "q8_0" {
			preset = "tiny"
		}
		m := randomModel(t, preset, typ, 1)
		e, _ := NewEngine(m, Options{Threads: 2})
		ctx := context.Background()
		logits, err := e.EvalTo(ctx, randomTokens(8, m.Config.Vocab, 2), LogitsLast, nil)
		if err != nil {
			t.Fatal(err)
		}
		tok := 0
		allocs := testing.AllocsPerRun(20, func() {
			tok = (tok + 7) % m.Config.Vocab
			if logits, err = e.EvalTo(ctx, []int{tok}, LogitsLast, logits); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decoded token", typ, allocs)
		}
		e.Close()
	}
}
