//go:build !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
	"golang.org/x/sys/cpu"
)

// randHalf returns a random finite half over a wide range of magnitudes
// (subnormals and the largest included), either sign.
func randHalf(r *rand.Rand) uint16 {
	for {
		h := uint16(r.Uint32())
		if h&0x7c00 != 0x7c00 { // not Inf or NaN
			if r.IntN(4) == 0 {
				return h
			}
			// Mostly values like activations: exponents around 1.
			return h&0x83ff | uint16(11+r.IntN(8))<<10
		}
	}
}

// The AVX-512 splits are the Go split (splitBF16, splitHalf) bit for bit.
func TestSplitBF16(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Skip("no AVX-512: the splits are NOT tested (they run only at the amx level)")
	}
	r := rand.New(rand.NewPCG(61, 62))
	const n = 4096
	src := make([]byte, 2*n)
	xs := make([]float32, n)
	for i := range n {
		h := randHalf(r)
		src[2*i], src[2*i+1] = byte(h), byte(h>>8)
		xs[i] = quant.FP16ToFP32(h)
		if i%7 == 0 { // any float32, not only halves: hi must still round
			xs[i] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.IntN(40)-20)))
		}
	}
	hi, lo := make([]uint16, n), make([]uint16, n)
	splitF16BF16(&hi[0], &lo[0], &src[0], n)
	for i := range n {
		wh, wl := splitHalf(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		if hi[i] != wh || lo[i] != wl {
			t.Fatalf("splitF16BF16: half %#04x: (%#04x, %#04x), want (%#04x, %#04x)", uint16(src[2*i])|uint16(src[2*i+1])<<8, hi[i], lo[i], wh, wl)
		}
		// hi + lo is the half itself.
		if got, want := math.Float32frombits(uint32(wh)<<16)+math.Float32frombits(uint32(wl)<<16), quant.FP16ToFP32(uint16(src[2*i])|uint16(src[2*i+1])<<8); got != want {
			t.Fatalf("half %v split into %v + %v", want, math.Float32frombits(uint32(wh)<<16), math.Float32frombits(uint32(wl)<<16))
		}
	}
	splitF32BF16(&hi[0], &lo[0], &xs[0], n)
	for i, x := range xs {
		wh, wl := splitBF16(x)
		if hi[i] != wh || lo[i] != wl {
			t.Fatalf("splitF32BF16(%v): (%#04x, %#04x), want (%#04x, %#04x)", x, hi[i], lo[i], wh, wl)
		}
	}
}

// MulHalves against float64 sums of the halves' products, for every
// shape the engine gives it: partial rows of a, column and K ranges that
// start inside b, rows of b and K that are not multiples of 32 (zero
// padding), b packed in blocks of rows from stages filled in pieces. The
// bound is f32 summation's: the products of halves are exact (dropping
// the lo.lo products measured 1.1e-5 of the magnitudes here).
func TestMulHalves(t *testing.T) {
	if !TileAttention() {
		if hasLevel("amx") {
			t.Fatal("the amx level is selectable but the current level has no tile attention")
		}
		amxSkip(t)
	}
	r := rand.New(rand.NewPCG(63, 64))
	var st HalfStage
	var bt HalfTiles
	worstErr := 0.0
	defer func() { t.Logf("worst error %g of the sum of |products|", worstErr) }()
	for _, c := range []struct{ n, k, m, j0, j1, k0, k1 int }{
		{32, 32, 32, 0, 32, 0, 32},
		{16, 256, 16, 0, 32, 0, 256},
		{100, 256, 32, 32, 128, 0, 256},
		{256, 517, 9, 0, 256, 96, 544},
		{256, 64, 1, 0, 256, 32, 64},
		{47, 70, 20, 0, 64, 0, 96},
	} {
		// b: n rows of k halves; set in pieces of random length.
		bh := make([]uint16, c.n*c.k)
		for i := range bh {
			bh[i] = randHalf(r)
		}
		// Packed in blocks of 32 or 64 rows, each through the stage.
		var mem []byte
		if c.m%2 == 1 { // some cases in the caller's memory
			mem = make([]byte, HalfTilesBytes(c.n, c.k))
		}
		bt.Reset(c.n, c.k, mem)
		for r0 := 0; r0 < c.n; {
			nr := min(c.n-r0, 32*(1+r.IntN(2)))
			st.Reset(nr, c.k)
			for i := 0; i < nr; i++ {
				for k0 := 0; k0 < c.k; {
					m := min(c.k-k0, 1+r.IntN(40))
					src := make([]byte, 2*m)
					for j := range m {
						h := bh[(r0+i)*c.k+k0+j]
						src[2*j], src[2*j+1] = byte(h), byte(h>>8)
					}
					st.Set(i, k0, src)
					k0 += m
				}
			}
			bt.Pack(&st, r0)
			r0 += nr
		}
		kk := c.k1 - c.k0
		lda := kk + 3
		a := make([]float32, 32*lda)
		for i := range a {
			a[i] = quant.FP16ToFP32(randHalf(r))
		}
		ldo := c.j1 - c.j0 + 5
		out := make([]float32, 32*ldo)
		for i := range out {
			out[i] = float32(math.NaN()) // every output is written
		}
		// Then again, added to what out holds: twice the sums.
		for pass, acc := range []bool{false, true} {
			MulHalves(a, lda, c.m, &bt, c.j0, c.j1, c.k0, c.k1, out, ldo, acc)
			for i := range 32 {
				for j := c.j0; j < c.j1; j++ {
					var want, mag float64
					if i < c.m {
						for k := c.k0; k < min(c.k1, c.k); k++ {
							if j < c.n {
								p := float64(a[i*lda+k-c.k0]) * float64(quant.FP16ToFP32(bh[j*c.k+k]))
								want += p
								mag += math.Abs(p)
							}
						}
					}
					want *= float64(pass + 1)
					mag *= float64(pass + 1)
					got := float64(out[i*ldo+j-c.j0])
					if e := math.Abs(got-want) / (mag + 1e-30); e > worstErr {
						worstErr = e
					}
					if math.Abs(got-want) > 2e-6*mag+1e-30 || math.IsNaN(got) {
						t.Fatalf("%+v acc %v: out[%d][%d] = %g, want %g (sum of |products| %g)", c, acc, i, j, got, want, mag)
					}
				}
			}
		}
	}
}

// BenchmarkMulHalves: the two products of a tile attention row pair, 32
// query vectors of a 256-wide head against a block of 256 positions (the
// engine's tileBlock, its tiles in L2) and against 2,048 (2 MiB of tiles,
// beyond L2): scores (K = 256, N = positions) and outputs (K = positions,
// N = 256). GMAC/s counts the products of halves (each four tile
// products).
func BenchmarkMulHalves(b *testing.B) {
	if !TileAttention() {
		b.Skip("no tile attention at this level")
	}
	r := rand.New(rand.NewPCG(65, 66))
	const hd = 256
	for _, c := range []struct {
		name       string
		rows, k, m int
	}{{"scores/256", 256, hd, 32}, {"outputs/256", hd, 256, 32}, {"scores/2048", 2048, hd, 32}, {"outputs/2048", hd, 2048, 32}} {
		b.Run(c.name, func(b *testing.B) {
			var st HalfStage
			var bt HalfTiles
			st.Reset(c.rows, c.k)
			src := make([]byte, 2*c.k)
			for i := range c.rows {
				for j := range c.k {
					h := randHalf(r)
					src[2*j], src[2*j+1] = byte(h), byte(h>>8)
				}
				st.Set(i, 0, src)
			}
			bt.Reset(c.rows, c.k, nil)
			bt.Pack(&st, 0)
			a := make([]float32, c.m*c.k)
			for i := range a {
				a[i] = quant.FP16ToFP32(randHalf(r))
			}
			out := make([]float32, 32*c.rows)
			for b.Loop() {
				MulHalves(a, c.k, c.m, &bt, 0, c.rows, 0, c.k, out, c.rows, false)
			}
			b.ReportMetric(float64(c.m*c.k*c.rows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
