package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// gemmShapes exercise the matrix-matrix kernels: whole and partial 16-token
// tiles, whole 16-row tiles with and without leftover rows (which go to the
// vector kernels), one and many blocks along K, batches of more than one
// 64-token tile. Batches below gemmMinTokens are covered by the MatMul tests.
var gemmShapes = []struct{ rows, nb, b int }{
	{16, 1, 16}, {16, 8, 17}, {48, 3, 33}, {40, 2, 16}, {37, 26, 20}, {32, 8, 64}, {24, 1, 31}, {24, 2, 70}, {13, 2, 19},
}

// gemmCases is gemmShapes, trimmed in -short mode (emulated runs) to one
// shape of each kind: many blocks, an odd number of them, a partial token
// tile, rows that are not a multiple of 4 (arm64's row quads) or of 16.
func gemmCases() []struct{ rows, nb, b int } {
	if testing.Short() {
		return []struct{ rows, nb, b int }{{16, 8, 17}, {48, 3, 33}, {24, 1, 31}, {13, 2, 19}}
	}
	return gemmShapes
}

// skipGeneric skips the generic level, where MatMul is the quant
// reference row by row: comparing it with itself proves nothing and takes
// most of the time.
func skipGeneric(t *testing.T) {
	if ISA() == "generic" {
		t.Skip("generic level: MatMul is the reference itself")
	}
}

// TestGemmK runs the batched K-quant products in both layouts through
// every level's matrix-matrix kernels, in every scale mode, against the
// quant references (exactly where every partial sum is an exact float), and
// checks that the output stride gap is left alone.
func TestGemmK(t *testing.T) {
	type kern struct {
		typ quant.Type
		x8  bool
		mm  func([]byte, int, *Q8KBatch, []float32, int)
		ref func([]byte, []quant.BlockQ8K) float32
	}
	kernels := []kern{
		{quant.Q4_K, false, MatMulQ4K, quant.DotQ4K},
		{quant.Q4_K, true, MatMulQ4Kx8, quant.DotQ4K},
		{quant.Q5_K, false, MatMulQ5K, quant.DotQ5K},
		{quant.Q6_K, false, MatMulQ6K, quant.DotQ6K},
		{quant.Q6_K, true, MatMulQ6Kx8, quant.DotQ6K},
	}
	forEachLevel(t, func(t *testing.T) {
		skipGeneric(t)
		r := rand.New(rand.NewPCG(31, 32))
		for _, k := range kernels {
			lay := layouts[k.typ]
			for _, mode := range weightModes {
				if mode == modeExactMin && lay.dminOff < 0 {
					continue
				}
				for _, c := range gemmCases() {
					if k.x8 && c.rows%Interleave != 0 {
						continue
					}
					w := makeWeights(r, lay, c.nb, c.rows, mode)
					wk := w
					if k.x8 {
						wk = repacked(t, k.typ, w, c.rows, c.nb*256)
					}
					a := make([]quant.BlockQ8K, 0, c.b*c.nb)
					for range c.b {
						a = append(a, makeQ8K(r, c.nb, mode)...)
					}
					ldo := c.rows + 3
					out := make([]float32, c.b*ldo)
					for i := range out {
						out[i] = -7
					}
					k.mm(wk, c.rows, NewQ8KBatch(a, c.b), out, ldo)
					rb := c.nb * lay.bs
					absW := make([][]float64, c.rows)
					for i := range absW {
						absW[i] = absWeights(t, lay, w[i*rb:(i+1)*rb], c.nb*256)
					}
					for tok := 0; tok < c.b; tok++ {
						at := a[tok*c.nb : (tok+1)*c.nb]
						af := q8kFloats(at)
						for i := 0; i < ldo; i++ {
							if i >= c.rows {
								if out[tok*ldo+i] != -7 {
									t.Fatalf("%v x8=%v %s %+v: wrote into the output stride gap", k.typ, k.x8, mode, c)
								}
								continue
							}
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v x8=%v %s rows=%d nb=%d b=%d token %d row %d", k.typ, k.x8, mode, c.rows, c.nb, c.b, tok, i)
							check(t, what, out[tok*ldo+i], k.ref(row, at), magnitudeOf(absW[i], af), mode == modeExactD || mode == modeExactMin)
						}
					}
				}
			}
		}
	})
}

// TestGemmQ8_0 is TestGemmK for Q8_0 and Q4_0 weights with Q8_0 activations.
func TestGemmQ8_0(t *testing.T) {
	kernels := []struct {
		typ quant.Type
		mm  func([]byte, int, *Q80Batch, []float32, int)
		ref func([]byte, []quant.BlockQ8_0) float32
	}{
		{quant.Q8_0, MatMulQ8_0, quant.DotQ8_0},
		{quant.Q4_0, MatMulQ4_0, quant.DotQ4_0},
	}
	forEachLevel(t, func(t *testing.T) {
		skipGeneric(t)
		r := rand.New(rand.NewPCG(33, 34))
		for _, k := range kernels {
			lay := layouts[k.typ]
			for _, mode := range weightModes {
				if mode == modeExactMin {
					continue
				}
				// Q8_0 rows of the K-quant widths, less one block for odd
				// c.nb so that kernels working on pairs of blocks meet a
				// last single one; then 1 to 6 blocks, so that kernels
				// working blocks ahead meet every way a row can end.
				type shape struct{ rows, nb, b int }
				var shapes []shape
				for _, c := range gemmCases() {
					shapes = append(shapes, shape{c.rows, c.nb*8 - c.nb&1, c.b})
				}
				for nb := 1; nb <= 6; nb++ {
					shapes = append(shapes, shape{16, nb, 17})
				}
				for _, c := range shapes {
					nb := c.nb
					w := makeWeights(r, lay, nb, c.rows, mode)
					a := make([]quant.BlockQ8_0, 0, c.b*nb)
					for range c.b {
						a = append(a, makeQ80(r, nb, mode)...)
					}
					ldo := c.rows + 3
					out := make([]float32, c.b*ldo)
					for i := range out {
						out[i] = -7
					}
					k.mm(w, c.rows, NewQ80Batch(a, c.b), out, ldo)
					rb := nb * lay.bs
					absW := make([][]float64, c.rows)
					for i := range absW {
						absW[i] = absWeights(t, lay, w[i*rb:(i+1)*rb], nb*32)
					}
					for tok := 0; tok < c.b; tok++ {
						at := a[tok*nb : (tok+1)*nb]
						af := q80Floats(at)
						for i := 0; i < ldo; i++ {
							if i >= c.rows {
								if out[tok*ldo+i] != -7 {
									t.Fatalf("%v %s %+v: wrote into the output stride gap", k.typ, mode, c)
								}
								continue
							}
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v %s rows=%d nb=%d b=%d token %d row %d", k.typ, mode, c.rows, nb, c.b, tok, i)
							check(t, what, out[tok*ldo+i], k.ref(row, at), magnitudeOf(absW[i], af), mode == modeExactD)
						}
					}
				}
			}
		}
	})
}

// TestGemmBF16 is TestGemmK for BF16 weights: random values, and small
// integers where every partial sum is exact and the result must match bit
// for bit.
func TestGemmBF16(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		skipGeneric(t)
		r := rand.New(rand.NewPCG(35, 36))
		for _, exact := range []bool{false, true} {
			for _, c := range gemmCases() {
				n := c.nb * 64
				if c.b%2 == 1 {
					n += 13 // a partial last chunk of 32
				}
				val := func() float32 {
					if exact {
						return float32(r.IntN(17) - 8)
					}
					return float32(r.NormFloat64())
				}
				w := make([]byte, 1+2*c.rows*n)[1:]
				for i := 0; i < c.rows*n; i++ {
					h := quant.FP32ToBF16(val())
					w[2*i], w[2*i+1] = byte(h), byte(h>>8)
				}
				x := make([]float32, c.b*n)
				for i := range x {
					x[i] = val()
				}
				quant.RoundBF16(x)
				ldo := c.rows + 3
				out := make([]float32, c.b*ldo)
				for i := range out {
					out[i] = -7
				}
				matMulBF16(w, c.rows, x, c.b, out, ldo)
				for tok := 0; tok < c.b; tok++ {
					xt := x[tok*n : (tok+1)*n]
					for i := 0; i < ldo; i++ {
						if i >= c.rows {
							if out[tok*ldo+i] != -7 {
								t.Fatalf("BF16 %+v: wrote into the output stride gap", c)
							}
							continue
						}
						row := w[2*i*n : 2*(i+1)*n]
						what := fmt.Sprintf("BF16 exact=%v rows=%d n=%d b=%d token %d row %d", exact, c.rows, n, c.b, tok, i)
						check(t, what, out[tok*ldo+i], quant.DotBF16(row, xt), magFloat(quant.BF16, row, xt), exact)
					}
				}
			}
		}
	})
}

// BenchmarkGemm measures the batched products of every weight type at
// every level on a prefill-sized shape (2048 rows, K = 2048, one thread; 8
// and 32 tokens are batched decoding),
// in GMAC/s (multiply-adds per second) and GB/s of weights.
func BenchmarkGemm(b *testing.B) {
	const rows, k = 2048, 2048
	r := rand.New(rand.NewPCG(37, 38))
	for _, toks := range []int{8, 32, 64, 256} {
		w4 := makeWeights(r, layouts[quant.Q4_K], k/256, rows, modeNormal)
		w4x := make([]byte, len(w4))
		if err := Repack(quant.Q4_K, w4x, w4, rows, k); err != nil {
			b.Fatal(err)
		}
		w6 := makeWeights(r, layouts[quant.Q6_K], k/256, rows, modeNormal)
		w6x := make([]byte, len(w6))
		if err := Repack(quant.Q6_K, w6x, w6, rows, k); err != nil {
			b.Fatal(err)
		}
		w8 := makeWeights(r, layouts[quant.Q8_0], k/32, rows, modeNormal)
		w8x := make([]byte, len(w8))
		if err := Repack(quant.Q8_0, w8x, w8, rows, k); err != nil {
			b.Fatal(err)
		}
		// Weights like a model's (no subnormals: random bytes would make
		// 1 in 128 of them subnormal, and every level would measure the
		// CPU's microcode assists instead of its kernel).
		wb := make([]byte, 2*rows*k)
		for i := 0; i < rows*k; i++ {
			h := quant.FP32ToBF16(float32(r.NormFloat64()))
			wb[2*i], wb[2*i+1] = byte(h), byte(h>>8)
		}
		var ak []quant.BlockQ8K
		var a8 []quant.BlockQ8_0
		for range toks {
			ak = append(ak, makeQ8K(r, k/256, modeNormal)...)
			a8 = append(a8, makeQ80(r, k/32, modeNormal)...)
		}
		x := make([]float32, toks*k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		quant.RoundBF16(x)
		out := make([]float32, toks*rows)
		cases := []struct {
			name string
			w    []byte
			run  func()
		}{
			{"Q4_K", w4, func() { MatMulQ4K(w4, rows, NewQ8KBatch(ak, toks), out, rows) }},
			{"Q4_Kx8", w4x, func() { MatMulQ4Kx8(w4x, rows, NewQ8KBatch(ak, toks), out, rows) }},
			{"Q6_K", w6, func() { MatMulQ6K(w6, rows, NewQ8KBatch(ak, toks), out, rows) }},
			{"Q6_Kx8", w6x, func() { MatMulQ6Kx8(w6x, rows, NewQ8KBatch(ak, toks), out, rows) }},
			{"Q8_0", w8, func() { MatMulQ8_0(w8, rows, NewQ80Batch(a8, toks), out, rows) }},
			{"Q8_0x8", w8x, func() { MatMulQ8_0x8(w8x, rows, NewQ80Batch(a8, toks), out, rows) }},
			{"BF16", wb, func() { matMulBF16(wb, rows, x, toks, out, rows) }},
		}
		for _, l := range Levels() {
			if l == "generic" {
				continue
			}
			for _, c := range cases {
				b.Run(fmt.Sprintf("%s/%s/b=%d", l, c.name, toks), func(b *testing.B) {
					if err := SetISA(l); err != nil {
						b.Fatal(err)
					}
					defer SetISA(Levels()[len(Levels())-1])
					if c.name == "Q8_0x8" && !RepackPays(quant.Q8_0) {
						b.Skip("this level keeps Q8_0 in the file's layout")
					}
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPU()
					for b.Loop() {
						c.run()
					}
					s := b.Elapsed().Seconds() / float64(b.N)
					b.ReportMetric(float64(rows)*k*float64(toks)/s/1e9, "GMAC/s")
					b.ReportMetric(float64(len(c.w))/s/1e9, "GB/s")
					if cpu := (threadCPU() - cpu0).Seconds() / float64(b.N); cpu > 0 {
						// Per second of this thread's CPU time: what the
						// kernel does when it has the core, on a shared host.
						b.ReportMetric(float64(rows)*k*float64(toks)/cpu/1e9, "GMAC/cpu-s")
					}
				})
			}
		}
	}
}

// TestBatchReuse: products sharing one batch (and what a level lays out
// of it) give what each gives with a batch of its own, for weights of
// every K-quant type, Q8_0 and BF16 weights, and row chunks of one matrix, and after
// Reset with new contents in the same memory the batch gives the new
// contents' products.
func TestBatchReuse(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		skipGeneric(t)
		r := rand.New(rand.NewPCG(41, 42))
		const nb, b, rows = 3, 37, 48
		a := make([]quant.BlockQ8K, 0, b*nb)
		for range b {
			a = append(a, makeQ8K(r, nb, modeNormal)...)
		}
		x := make([]float32, b*nb*256)
		newX := func() {
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			quant.RoundBF16(x)
		}
		newX()
		a8 := make([]quant.BlockQ8_0, 0, b*nb*8)
		for range b {
			a8 = append(a8, makeQ80(r, nb*8, modeNormal)...)
		}
		w4 := makeWeights(r, layouts[quant.Q4_K], nb, rows, modeNormal)
		w8 := makeWeights(r, layouts[quant.Q8_0], nb*8, rows, modeNormal)
		w6 := makeWeights(r, layouts[quant.Q6_K], nb, rows, modeNormal)
		wb := make([]byte, 2*rows*nb*256)
		for i := 0; i < rows*nb*256; i++ {
			h := quant.FP32ToBF16(float32(r.NormFloat64()))
			wb[2*i], wb[2*i+1] = byte(h), byte(h>>8)
		}
		type prod struct {
			name string
			run  func(q *Q8KBatch, q8 *Q80Batch, f *BF16Batch, out []float32)
		}
		prods := []prod{
			{"Q4_K", func(q *Q8KBatch, _ *Q80Batch, _ *BF16Batch, out []float32) { MatMulQ4K(w4, rows, q, out, rows) }},
			{"Q6_K", func(q *Q8KBatch, _ *Q80Batch, _ *BF16Batch, out []float32) { MatMulQ6K(w6, rows, q, out, rows) }},
			{"Q4_K rows 16-47", func(q *Q8KBatch, _ *Q80Batch, _ *BF16Batch, out []float32) {
				MatMulQ4K(w4[16*nb*quant.BlockQ4_KSize:], rows-16, q, out[16:], rows)
			}},
			{"Q8_0", func(_ *Q8KBatch, q8 *Q80Batch, _ *BF16Batch, out []float32) { MatMulQ8_0(w8, rows, q8, out, rows) }},
			{"Q8_0 rows 16-47", func(_ *Q8KBatch, q8 *Q80Batch, _ *BF16Batch, out []float32) {
				MatMulQ8_0(w8[16*nb*8*quant.BlockQ8_0Size:], rows-16, q8, out[16:], rows)
			}},
			{"BF16", func(_ *Q8KBatch, _ *Q80Batch, f *BF16Batch, out []float32) { MatMulBF16(wb, rows, f, out, rows) }},
			{"BF16 rows 16-47", func(_ *Q8KBatch, _ *Q80Batch, f *BF16Batch, out []float32) {
				MatMulBF16(wb[2*16*nb*256:], rows-16, f, out[16:], rows)
			}},
		}
		q, q8, f := NewQ8KBatch(a, b), NewQ80Batch(a8, b), NewBF16Batch(x, b)
		for round := 0; round < 2; round++ {
			for _, p := range prods {
				want := make([]float32, b*rows)
				got := make([]float32, b*rows)
				p.run(NewQ8KBatch(append([]quant.BlockQ8K(nil), a...), b), NewQ80Batch(append([]quant.BlockQ8_0(nil), a8...), b),
					NewBF16Batch(append([]float32(nil), x...), b), want)
				p.run(q, q8, f, got)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("round %d %s: output %d: shared batch %v, own batch %v", round, p.name, i, got[i], want[i])
					}
				}
			}
			// The engine's way: row chunks of one product on several
			// goroutines at once, the first to ask building the layout.
			want := make([]float32, b*rows)
			MatMulQ4K(w4, rows, NewQ8KBatch(append([]quant.BlockQ8K(nil), a...), b), want, rows)
			got := make([]float32, b*rows)
			q.Reset(a, b)
			var wg sync.WaitGroup
			for c := 0; c < rows/16; c++ {
				wg.Go(func() {
					MatMulQ4K(w4[16*c*nb*quant.BlockQ4_KSize:], 16, q, got[16*c:], rows)
				})
			}
			wg.Wait()
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("round %d, row chunks at once: output %d: %v, want %v", round, i, got[i], want[i])
				}
			}
			copy(a, makeQ8K(r, nb*b, modeNormal)) // new contents, same memory
			copy(a8, makeQ80(r, nb*8*b, modeNormal))
			newX()
			q.Reset(a, b)
			q8.Reset(a8, b)
			f.Reset(x, b)
		}
	})
}

// matMulBF16 is MatMulBF16 on a batch of its own, in the form of the other
// float products.
func matMulBF16(w []byte, rows int, x []float32, b int, out []float32, ldo int) {
	MatMulBF16(w, rows, NewBF16Batch(x, b), out, ldo)
}

// TestBatchLayoutKind: a batch laid out for one level's kernels and then
// asked by another level's for a different layout (a level change while
// products share it) panics rather than hand the kernels the wrong bytes.
func TestBatchLayoutKind(t *testing.T) {
	if !slices.Contains(Levels(), "amx") || !slices.Contains(Levels(), "avx512") {
		t.Skip("needs the amx and avx512 levels, whose kernels lay batches out differently")
	}
	defer SetISA(Levels()[len(Levels())-1])
	r := rand.New(rand.NewPCG(43, 44))
	const nb, b, rows = 2, 32, 16
	var a []quant.BlockQ8K
	for range b {
		a = append(a, makeQ8K(r, nb, modeNormal)...)
	}
	w := makeWeights(r, layouts[quant.Q4_K], nb, rows, modeNormal)
	out := make([]float32, b*rows)
	x := NewQ8KBatch(a, b)
	if err := SetISA("amx"); err != nil {
		t.Fatal(err)
	}
	MatMulQ4K(w, rows, x, out, rows)
	if err := SetISA("avx512"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a batch laid out for amx was read by avx512's kernel")
		}
	}()
	MatMulQ4K(w, rows, x, out, rows)
}

// TestGemmEmptyRows: rows of no elements (K = 0) give zeros at every level
// (they never reach the matrix-matrix kernels, which need elements).
func TestGemmEmptyRows(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		const rows, b = 32, 32
		out := make([]float32, b*rows)
		for i := range out {
			out[i] = -7
		}
		MatMulQ4K(nil, rows, NewQ8KBatch(nil, b), out, rows)
		MatMulQ4Kx8(nil, rows, NewQ8KBatch(nil, b), out, rows)
		MatMulBF16(nil, rows, NewBF16Batch(nil, b), out, rows)
		for i, v := range out {
			if v != 0 {
				t.Fatalf("output %d: %v, want 0", i, v)
			}
		}
	})
}
