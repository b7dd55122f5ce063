package spark

import (
	"context"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/droidgo/droidgo/model/kernels"
)

// tileSkip skips a test of tile attention where the level has none.
func tileSkip(t *testing.T) {
	t.Helper()
	if !kernels.TileAttention() {
		t.Skipf("level %s computes no attention on tiles: tile attention NOT tested here (amx hosts do)", kernels.ISA())
	}
}

// Every tile task's outputs are the vector path's (attendF16, token by
// token) for the same queries and cache, in full-attention and sliding
// layers, for a pass that starts inside the cache (its full layers see
// more than one tileBlock of positions) and whose sliding ring has
// wrapped, in tasks of one row pair and of tilePairs: they differ only by f32 summation order, which can move a
// weight's f16 rounding by one step (2^-12 of the largest value).
func TestTileTasksMatchVector(t *testing.T) {
	tileSkip(t)
	ctx := context.Background()
	for _, preset := range []string{"tiny", "gqa"} {
		m := randomModel(t, preset, "f32", 13)
		for _, sliding := range []bool{false, true} {
			e, _ := NewEngine(m, Options{KV: KVF16, Batch: 40, slack: 39})
			L := e.c.Layers
			e.c.Sliding = slices.Clone(e.c.Sliding)
			e.c.Sliding[L-1] = sliding
			s := e.NewSeq()
			V := e.c.Vocab
			toks := randomTokens(300+37, V, 6)
			for _, part := range [][]int{toks[:300], toks[300:]} {
				if _, err := e.engine.evalSeq(ctx, s, part, LogitsNone, nil); err != nil {
					t.Fatal(err)
				}
			}
			B := 37
			sp := span{s: s, t0: 0, n: B, p0: len(toks) - B}
			if !e.tileSpan(&sp, L-1) {
				t.Fatalf("%s: a span of %d tokens does not take the tile path", preset, B)
			}
			e.cur.spans, e.cur.layer = []span{sp}, L-1
			c := &e.c
			QD := c.QDim()
			// Tasks of one row pair and of tilePairs (the last one short).
			per := tileQueries / (c.Heads / c.KVHeads)
			var gots [][]float32
			for _, tg := range []int{per, tilePairs * per} {
				for kh := range c.KVHeads {
					for t0 := 0; t0 < B; t0 += tg {
						e.attendTiles(0, &sp, &e.tiles[0], kh, t0, min(B, t0+tg))
					}
				}
				gots = append(gots, slices.Clone(e.att[:B*QD]))
			}
			for kh := range c.KVHeads {
				for tk := range B {
					e.attendF16(0, &sp, kh, tk, tk+1)
				}
			}
			want := e.att[:B*QD]
			for k, got := range gots {
				d, mx := 0.0, 0.0
				for i := range want {
					d, mx = max(d, math.Abs(float64(got[i]-want[i]))), max(mx, math.Abs(float64(want[i])))
				}
				t.Logf("%s, last layer sliding %v, tasks of %d row pairs: max diff %.3g of max %.3g", preset, sliding, 1+k*(tilePairs-1), d, mx)
				if d > mx/4096 || mx == 0 {
					t.Errorf("%s, last layer sliding %v, tasks of %d row pairs: tile outputs differ from the vector path's by %g (largest output %g)", preset, sliding, 1+k*(tilePairs-1), d, mx)
				}
			}
			e.cur.spans = nil
		}
	}
}

// The engine with tile attention, prompts in one pass or in several (the
// sliding rings wrapping, keys in more than one pack block) and a sequence
// forked from a prefix, computes what the vector path and the reference
// compute: within TestEngineMatchesReference's bound of the reference,
// and as close to the vector path as two vector levels are to each other
// (over these 300 tokens the avx2 and avx512 levels' f16 attention, which
// sum in different orders, differ by 0.0041 (tiny) and 0.0021 (gqa); tiles
// and vectors by 0.0061 and 0.0028: each changed order moves some weights'
// f16 rounding by a step, and the logits of a random model follow).
func TestTileAttentionEngine(t *testing.T) {
	tileSkip(t)
	ctx := context.Background()
	for _, preset := range []string{"tiny", "gqa"} {
		m := randomModel(t, preset, "f32", 14)
		V := m.Config.Vocab
		toks := randomTokens(300, V, 7)
		ref := referenceLogits(t, m, toks)
		for _, opts := range []Options{{Batch: 64}, {Batch: 32, slack: 31, Threads: 3}} {
			opts.KV = KVF16
			tiles, _ := NewEngine(m, opts)
			got := evalAll(t, tiles, toks)
			opts.vectorAttention = true
			vec, _ := NewEngine(m, opts)
			want := evalAll(t, vec, toks)
			worst := 0.0
			for p := range toks {
				worst = max(worst, maxDiff32(got[p*V:(p+1)*V], ref[p]))
			}
			if d := maxDiff32(got, want); d > 1e-2 {
				t.Errorf("%s batch %d: tile attention differs from the vector path by %.3g", preset, opts.Batch, d)
			}
			if worst > 0.03 {
				t.Errorf("%s batch %d: max |engine - reference| = %.3g", preset, opts.Batch, worst)
			}

			// A fork of the first 200 positions, the rest in passes of
			// the batch: its tiles read the prefix's cache.
			s := tiles.NewSeq()
			if _, err := tiles.engine.evalSeq(ctx, s, toks[:200], LogitsNone, nil); err != nil {
				t.Fatal(err)
			}
			p, err := s.Share()
			if err != nil {
				t.Fatal(err)
			}
			f, err := tiles.Fork(p)
			if err != nil {
				t.Fatal(err)
			}
			fk, err := tiles.engine.evalSeq(ctx, f, toks[200:], LogitsAll, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff32(fk, got[200*V:]); d > 1e-2 {
				t.Errorf("%s batch %d: a fork differs from the whole prompt by %.3g", preset, opts.Batch, d)
			}
			// evalSeq runs on the inner engine: the Engine, whose cleanup
			// stops the workers, must stay reachable until it returns.
			runtime.KeepAlive(tiles)
		}
	}
}

// The spans of one pass share the tile arena while their positions fit
// the budget together; a span beyond it takes the vector path; each
// span's logits are what it gets alone.
func TestTileSpansShareArena(t *testing.T) {
	tileSkip(t)
	ctx := context.Background()
	m := randomModel(t, "gqa", "f32", 15)
	V := m.Config.Vocab
	p1, p2 := randomTokens(40, V, 8), randomTokens(70, V, 9)
	alone := func(p []int) []float32 {
		e, _ := NewEngine(m, Options{KV: KVF16, Batch: 70, vectorAttention: true})
		return evalAll(t, e, p)
	}
	want1, want2 := alone(p1), alone(p2)
	for _, c := range []struct {
		budget int
		tiles  []bool
	}{{110, []bool{true, true}}, {100, []bool{true, false}}, {39, []bool{false, false}}} {
		e, _ := NewEngine(m, Options{KV: KVF16, Batch: 70, tileBudget: c.budget})
		s1, s2 := e.NewSeq(), e.NewSeq()
		works := []Work{{Seq: s1, Tokens: p1, Logits: LogitsAll}, {Seq: s2, Tokens: p2, Logits: LogitsAll}}
		if err := e.Step(ctx, works); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(e.spanTile[:2], c.tiles) {
			t.Errorf("budget %d: spans on tiles %v, want %v", c.budget, e.spanTile[:2], c.tiles)
		}
		// The budget's positions, each span padded to a multiple of 32.
		hd, pos := m.Config.HeadDim, c.budget+31*len(c.tiles)
		if len(e.tileMem) > m.Config.KVHeads*(kernels.HalfTilesBytes(pos, hd)+kernels.HalfTilesBytes(hd, pos))+128*len(c.tiles) {
			t.Errorf("budget %d: the arena holds %d bytes", c.budget, len(e.tileMem))
		}
		d := max(maxDiff32(works[0].Out, want1), maxDiff32(works[1].Out, want2))
		t.Logf("budget %d: spans on tiles %v, logits within %.3g of each span's alone", c.budget, e.spanTile[:2], d)
		if d > 1e-2 {
			t.Errorf("budget %d: logits differ from each span's alone by %.3g", c.budget, d)
		}
		runtime.KeepAlive(e)
	}
}
