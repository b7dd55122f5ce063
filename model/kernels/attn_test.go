package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// DotRows and AxpyRows equal the per-row DotF32 and Axpy of the same level
// within rounding, for row lengths with and without a multiple of 8, row
// counts around the 4-row step, and strides wider than a row.
func TestAttnRows(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(45, 46))
		for _, d := range []int{8, 64, 72, 256, 13} {
			for _, n := range []int{1, 3, 4, 5, 9, 517} {
				stride := 2*d + 3
				k := make([]float32, (n-1)*stride+d)
				for i := range k {
					k[i] = float32(r.NormFloat64())
				}
				q := make([]float32, d)
				for i := range q {
					q[i] = float32(r.NormFloat64())
				}
				out := make([]float32, n+1)
				out[n] = 42
				DotRows(q, k, stride, out[:n])
				if out[n] != 42 {
					t.Fatalf("d=%d n=%d: DotRows wrote past its output", d, n)
				}
				o := make([]float32, d+1)
				o[d] = 42
				want := make([]float32, d)
				for i := range o[:d] {
					o[i] = float32(i)
					want[i] = float32(i)
				}
				p := q[:min(len(q), n)]
				AxpyRows(p, k, stride, o[:d])
				if o[d] != 42 {
					t.Fatalf("d=%d n=%d: AxpyRows wrote past its output", d, n)
				}
				for j := 0; j < n; j++ {
					row := k[j*stride : j*stride+d]
					var mag float64
					for i := range row {
						mag += float64(abs32(row[i] * q[i]))
					}
					check(t, fmt.Sprintf("DotRows d=%d n=%d row %d", d, n, j), out[j], DotF32(q, row), mag, false)
				}
				for j, pj := range p {
					Axpy(pj, k[j*stride:j*stride+d], want)
				}
				for i := range want {
					check(t, fmt.Sprintf("AxpyRows d=%d n=%d [%d]", d, n, i), o[i], want[i], float64(d)+float64(len(p))*4, false)
				}
			}
		}
	})
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// BenchmarkAttnRows: one query head against 512 cached positions of a
// 256-float head (the KV rows 512 floats apart, as in Spark's cache), per
// level, in GFLOP/s.
func BenchmarkAttnRows(b *testing.B) {
	const d, n, stride = 256, 512, 512
	r := rand.New(rand.NewPCG(47, 48))
	k := make([]float32, n*stride)
	for i := range k {
		k[i] = float32(r.NormFloat64())
	}
	q := make([]float32, d)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	sc := make([]float32, n)
	o := make([]float32, d)
	for _, l := range Levels() {
		b.Run(l, func(b *testing.B) {
			if err := SetISA(l); err != nil {
				b.Fatal(err)
			}
			defer SetISA(Levels()[len(Levels())-1])
			for b.Loop() {
				DotRows(q, k, stride, sc)
				AxpyRows(sc, k, stride, o)
			}
			b.ReportMetric(4*d*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// RoundF16 equals quant.RoundF16 bit for bit at every level, on normal,
// subnormal, huge, tie and special values, whatever the length.
// TestRoundBF16: the bf16 rounding of every level is quant.RoundBF16 bit
// for bit: random values, ties at both parities, values that round up to
// Inf, infinities, subnormals, signed zeros and NaNs (signalling and quiet,
// with payloads).
func TestRoundBF16(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(53, 54))
		for _, n := range []int{0, 1, 7, 8, 9, 64, 333} {
			x := make([]float32, n)
			for i := range x {
				switch i % 8 {
				case 0:
					x[i] = float32(r.NormFloat64())
				case 1: // ties: the dropped half exactly 0x8000
					x[i] = math.Float32frombits(r.Uint32()&0xffff0000 | 0x8000)
				case 2:
					x[i] = math.Float32frombits(0x7f7f8000 + r.Uint32()&0xffff) // to Inf or not
				case 3:
					x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
				case 4:
					x[i] = math.Float32frombits(r.Uint32() & 0x807fffff) // subnormals
				case 5:
					x[i] = math.Float32frombits(uint32(r.IntN(2)) << 31) // ±0
				case 6:
					x[i] = math.Float32frombits(0x7f800001 | r.Uint32()&0x803fffff) // signalling NaNs
				default:
					x[i] = math.Float32frombits(r.Uint32()) // anything, NaNs included
				}
			}
			want := append([]float32(nil), x...)
			quant.RoundBF16(want)
			RoundBF16(x)
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d [%d]: got %#x, want %#x", n, i, math.Float32bits(x[i]), math.Float32bits(want[i]))
				}
			}
		}
	})
}

func TestRoundF16(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(51, 52))
		for _, n := range []int{0, 1, 7, 8, 9, 64, 333} {
			x := make([]float32, n)
			for i := range x {
				switch i % 6 {
				case 0:
					x[i] = float32(r.NormFloat64())
				case 1:
					x[i] = float32(r.NormFloat64()) * 1e-6 // f16 subnormals
				case 2:
					x[i] = float32(r.NormFloat64()) * 1e5 // beyond f16: inf
				case 3:
					x[i] = float32(r.IntN(2048)) + 0.5 // ties
				case 4:
					x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
				default:
					x[i] = float32(r.NormFloat64()) * 1e-9 // to zero
				}
			}
			want := append([]float32(nil), x...)
			quant.RoundF16(want)
			RoundF16(x)
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d [%d]: got %v (%#x), want %v (%#x)", n, i, x[i], math.Float32bits(x[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	})
}

// QuantizeQ8_0 equals quant.QuantizeQ8_0 bit for bit at every level: random
// blocks, all-zero ones, ties of x*id, one large value.
func TestQuantizeQ8_0(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(53, 54))
		for _, nb := range []int{1, 3, 64, 208} {
			x := make([]float32, 32*nb)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			for i := 0; i < 32; i++ {
				x[32*(nb-1)+i] = 0 // an all-zero block
			}
			if nb > 1 {
				for i := 0; i < 32; i++ { // ties: amax 127, values k+0.5
					x[i] = float32(i) - 15.5
				}
				x[0] = 127
				x[32] = 1e30
			}
			want := make([]quant.BlockQ8_0, nb)
			got := make([]quant.BlockQ8_0, nb)
			quant.QuantizeQ8_0(x, want)
			QuantizeQ8_0(x, got)
			for b := range want {
				if math.Float32bits(got[b].D) != math.Float32bits(want[b].D) || got[b].Qs != want[b].Qs {
					t.Fatalf("nb=%d block %d: got %v %v, want %v %v", nb, b, got[b].D, got[b].Qs, want[b].D, want[b].Qs)
				}
			}
		}
	})
}

// GELUErfMul against the float64 erf GELU at every level: relative error
// at most 2e-6 (about 16 float32 ulps; the float32 form's rounding on top
// of the approximation's 1.2e-7), over the range a GEGLU sees and beyond,
// signed zeros and the tails.
func TestGELUErfMul(t *testing.T) {
	// 0.5*x*erfc(-x/sqrt2) is 0.5*x*(1+erf(x/sqrt2)) without its
	// cancellation in the negative tail.
	ref := func(x float32) float32 {
		v := float64(x)
		return float32(0.5 * v * math.Erfc(-v/math.Sqrt2))
	}
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(55, 56))
		// 4096 + 3: whole steps of 16 and a Go tail; 4104 + 7: a last 8 for
		// the avx512 level's 8-wide tail.
		for _, n := range []int{4099, 4111} {
			g, u, y := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range g {
				switch i % 4 {
				case 0:
					g[i] = float32(r.NormFloat64())
				case 1:
					g[i] = float32(r.NormFloat64() * 4)
				case 2:
					g[i] = float32(r.Float64()*30 - 15)
				default:
					g[i] = float32(r.NormFloat64() * 1e-4)
				}
				u[i] = float32(r.NormFloat64())
			}
			g[0], g[1], g[2], g[3], g[4] = 0, float32(math.Copysign(0, -1)), 100, -100, -13
			GELUErfMul(y, g, u, ref)
			var worst float64
			for i := range y {
				want := float64(ref(g[i])) * float64(u[i])
				d := math.Abs(float64(y[i]) - want)
				if d > 2e-6*math.Abs(want)+1e-37 || math.IsNaN(float64(y[i])) {
					t.Fatalf("g=%v u=%v: got %v, want %v (diff %g)", g[i], u[i], y[i], want, d)
				}
				if math.Abs(want) > 1e-37 {
					worst = max(worst, d/math.Abs(want))
				}
			}
			t.Logf("largest relative error %.2g", worst)
		}
	})
}

// GELUTableMul at every level against its definition, bit for bit: every
// half as an input and its float32 neighbours, the ties between adjacent
// halves (rounding to even, carries into the exponent), the half subnormals
// and the float32 ones, the +-10 clamps and their neighbours, zeros,
// infinities and NaNs, with multipliers that include zeros, infinities and
// NaN; lengths around the 8-element step. The table's entries are all
// different, so a wrong index cannot give the right value.
func TestGELUTableMul(t *testing.T) {
	tab := make([]float32, 1<<16)
	for i := range tab {
		tab[i] = float32(i)*0.25 - 5000
	}
	want := func(x, u float32) float32 {
		switch {
		case x <= -10:
			return 0
		case x >= 10:
			return x * u
		}
		return tab[quant.FP32ToFP16(x)] * u
	}
	var g []float32
	for h := range 1 << 16 {
		x := quant.FP16ToFP32(uint16(h))
		b := math.Float32bits(x)
		next := quant.FP16ToFP32(uint16(h + 1))
		g = append(g, x, math.Float32frombits(b+1), math.Float32frombits(b-1), (x+next)/2)
	}
	ten := math.Float32bits(10)
	for _, b := range []uint32{ten - 1, ten, ten + 1, 0x80000000 | (ten - 1), 0x80000000 | ten, 0x80000000 | (ten + 1),
		1, 0x80000001, 0x007fffff, 0x807fffff, 0x33000000, 0x33000001, 0x32ffffff, 0x7f800000, 0xff800000,
		0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa12345, 0xffbfffff} {
		g = append(g, math.Float32frombits(b))
	}
	r := rand.New(rand.NewPCG(57, 58))
	for range 4096 {
		g = append(g, float32(r.NormFloat64()*4), math.Float32frombits(r.Uint32()))
	}
	u := make([]float32, len(g))
	for i := range u {
		u[i] = float32(r.NormFloat64())
	}
	u[3], u[5], u[7] = 0, float32(math.Inf(-1)), float32(math.NaN())
	forEachLevel(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 7, 8, 9, 23, 24, 31, 40, len(g)} {
			off := len(g) - n // the specials and random inputs are at the end
			y := make([]float32, n)
			GELUTableMul(y, g[off:], u[off:], tab)
			for i, v := range y {
				x, m := g[off+i], u[off+i]
				w := want(x, m)
				if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
					t.Fatalf("n=%d: g=%v (bits %#08x) u=%v: got %v (bits %#08x), want %v (bits %#08x)", n, x, math.Float32bits(x), m, v, math.Float32bits(v), w, math.Float32bits(w))
				}
			}
		}
	})
}

// MatMulF16Strided against quant.DotF16 row by row at every level: rows
// wider apart than they are long (the transposed values of the cache) and
// exactly their length (the keys), row counts around the 4-row step, head
// dimensions and slot runs with and without a multiple of 16, token counts
// around the 4-token step, set and accumulate; nothing outside the outputs
// is written.
func TestMatMulF16Strided(t *testing.T) {
	const pad = 7777
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(61, 62))
		for _, n := range []int{0, 1, 7, 15, 16, 17, 33, 256, 517, 1100} {
			for _, rows := range []int{1, 3, 4, 5, 8, 13, 70} {
				for _, b := range []int{1, 3, 4, 5, 8, 13, 16} {
					for _, ws := range []int{n, n + 9} {
						for _, acc := range []bool{false, true} {
							name := fmt.Sprintf("n=%d rows=%d b=%d ws=%d acc=%v", n, rows, b, ws, acc)
							w := make([]byte, 2*((rows-1)*ws+n))
							for i := 0; i+1 < len(w); i += 2 {
								h := quant.FP32ToFP16(float32(r.NormFloat64()))
								w[i], w[i+1] = byte(h), byte(h>>8)
							}
							xs, ldo := n+3, rows+2
							x := make([]float32, (b-1)*xs+n)
							for i := range x {
								x[i] = float32(r.NormFloat64())
							}
							out := make([]float32, (b-1)*ldo+rows+1)
							for i := range out {
								out[i] = pad
							}
							MatMulF16Strided(w, ws, n, rows, x, xs, b, out[:len(out)-1], ldo, acc)
							for i, v := range out {
								tk, row := i/ldo, i%ldo
								if i == len(out)-1 || row >= rows {
									if v != pad {
										t.Fatalf("%s: out[%d] = %v written outside the outputs", name, i, v)
									}
									continue
								}
								wr := w[2*row*ws : 2*(row*ws+n)]
								xt := x[tk*xs : tk*xs+n]
								want := quant.DotF16(wr, xt)
								mag := 0.0
								for j := range xt {
									mag += math.Abs(float64(quant.FP16ToFP32(uint16(wr[2*j])|uint16(wr[2*j+1])<<8) * xt[j]))
								}
								if acc {
									want += pad
									mag += pad
								}
								check(t, fmt.Sprintf("%s token %d row %d", name, tk, row), v, want, mag, false)
							}
						}
					}
				}
			}
		}
	})
}

// TestMatMulF16StridedGroups: a vector's products do not depend on the
// vectors that come with it, bit for bit (attention computes 16 vectors at
// once where it can, 4 where it cannot, and a token's result must not depend
// on its batch): every batch against the same vectors 4 at a time, with
// and without acc, tails and partial row groups included. (One vector alone
// runs the one-row kernel, whose sums may differ in the last bit: attention
// always has whole groups of 4.) At levels without a 16-vector kernel both
// sides run groups of 4, so only avx512 and amx can fail here.
func TestMatMulF16StridedGroups(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(69, 70))
		for _, n := range []int{1, 15, 16, 17, 100, 256} {
			for _, rows := range []int{1, 5, 16, 17, 70} {
				for _, b := range []int{16, 19, 32, 36} {
					for _, acc := range []bool{false, true} {
						name := fmt.Sprintf("n=%d rows=%d b=%d acc=%v", n, rows, b, acc)
						ws, xs, ldo := n+5, n+3, rows+2
						w := make([]byte, 2*((rows-1)*ws+n))
						for i := 0; i+1 < len(w); i += 2 {
							h := quant.FP32ToFP16(float32(r.NormFloat64()))
							w[i], w[i+1] = byte(h), byte(h>>8)
						}
						x := make([]float32, (b-1)*xs+n)
						for i := range x {
							x[i] = float32(r.NormFloat64())
						}
						init := make([]float32, (b-1)*ldo+rows)
						for i := range init {
							init[i] = float32(r.NormFloat64())
						}
						all := slices.Clone(init)
						MatMulF16Strided(w, ws, n, rows, x, xs, b, all, ldo, acc)
						part := slices.Clone(init)
						for t0 := 0; t0 < b; t0 += 4 {
							MatMulF16Strided(w, ws, n, rows, x[t0*xs:], xs, min(4, b-t0), part[t0*ldo:], ldo, acc)
						}
						for i := range all {
							if i%ldo < rows && math.Float32bits(all[i]) != math.Float32bits(part[i]) {
								t.Fatalf("%s: vector %d row %d is %v in the batch, %v in groups of 4", name, i/ldo, i%ldo, all[i], part[i])
							}
						}
					}
				}
			}
		}
	})
}

// ExpSum against the float64 exp at every level: relative error at most
// 1e-6 per element (the float32 form's few ulps) and for the sum, zero or
// a subnormal where the reference underflows, -Inf (a masked score) to 0,
// whole and partial 16-element steps; nothing past the row is written.
func TestExpSum(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(63, 64))
		for _, n := range []int{1, 5, 15, 16, 17, 31, 100, 2049} {
			for _, spread := range []float64{1, 10, 100, 1000} {
				x := make([]float32, n+1)
				mx := float32(math.Inf(-1))
				for i := range x[:n] {
					x[i] = float32(r.NormFloat64() * spread)
					if i%7 == 3 {
						x[i] = float32(math.Inf(-1))
					}
					mx = max(mx, x[i])
				}
				x[n] = 42
				const scale = 0.0625
				want := make([]float32, n)
				var wsum float64
				for i, v := range x[:n] {
					want[i] = float32(math.Exp(float64(v*scale - mx*scale)))
					wsum += float64(want[i])
				}
				sum := ExpSum(x[:n], scale, mx*scale)
				if x[n] != 42 {
					t.Fatalf("n=%d: ExpSum wrote past the row", n)
				}
				for i := range want {
					g, w := float64(x[i]), float64(want[i])
					if w < 0x1p-126 {
						if g > 0x1p-126 || g < 0 {
							t.Errorf("n=%d spread=%v [%d]: got %g, want %g (underflow)", n, spread, i, g, w)
						}
						continue
					}
					if math.Abs(g-w) > 1e-6*w {
						t.Errorf("n=%d spread=%v [%d]: got %g, want %g", n, spread, i, g, w)
					}
				}
				if math.Abs(sum-wsum) > 1e-6*wsum {
					t.Errorf("n=%d spread=%v: sum %g, want %g", n, spread, sum, wsum)
				}
			}
		}
	})
}

// BenchmarkAttnF16: the two products of f16 attention for one KV head over
// 2048 cached positions of a 256-wide head (the 1.7B's full-attention
// layers): the scores of g query vectors against the keys, and the g
// weight vectors times the transposed values (rows 4096 slots apart), all
// 2048 positions in one product ("values") or a block of 256 as the engine
// sums them ("block"), with g = 4 (one token's query heads) and 16 (a task
// of 4 tokens), each product and level on its own, in GMAC per second of
// the thread's CPU time.
func BenchmarkAttnF16(b *testing.B) {
	// block: the engine's value products go by blocks of 256 positions, for
	// weight vectors as long as the span (2,100: the agent's first prompt).
	const d, n, capacity, block, span = 256, 2048, 4096, 256, 2100
	r := rand.New(rand.NewPCG(65, 66))
	half := func(m int) []byte {
		w := make([]byte, 2*m)
		for i := 0; i < m; i++ {
			h := quant.FP32ToFP16(float32(r.NormFloat64()))
			w[2*i], w[2*i+1] = byte(h), byte(h>>8)
		}
		return w
	}
	k, v := half(n*d), half(d*capacity)
	for _, g := range []int{4, 16} {
		q := make([]float32, g*d)
		p := make([]float32, g*span)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		for i := range p {
			p[i] = r.Float32() / n
		}
		sc := make([]float32, g*n)
		o := make([]float32, g*d)
		for _, l := range Levels() {
			for _, what := range []string{"keys", "values", "block"} {
				b.Run(fmt.Sprintf("g=%d/%s/%s", g, what, l), func(b *testing.B) {
					if err := SetISA(l); err != nil {
						b.Fatal(err)
					}
					defer SetISA(Levels()[len(Levels())-1])
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPU()
					for b.Loop() {
						switch what {
						case "keys":
							MatMulF16Strided(k, d, d, n, q, d, g, sc, n, false)
						case "values":
							MatMulF16Strided(v, capacity, n, d, p, n, g, o, d, true)
						default:
							MatMulF16Strided(v, capacity, block, d, p, span, g, o, d, true)
						}
					}
					m := n
					if what == "block" {
						m = block
					}
					if cpu := (threadCPU() - cpu0).Seconds(); cpu > 0 {
						b.ReportMetric(float64(g*m*d)*float64(b.N)/cpu/1e9, "GMAC/cpu-s")
					}
				})
			}
		}
	}
}

// EncodeF16 equals quant.FP32ToFP16 bit for bit at every level on the
// values of TestRoundF16's mix (normal, subnormal, overflowing, ties,
// infinities, underflowing), NaNs staying NaNs, whatever the length;
// nothing past 2*len(x) bytes is written.
func TestEncodeF16(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(67, 68))
		for _, n := range []int{0, 1, 7, 8, 9, 64, 333} {
			x := make([]float32, n)
			for i := range x {
				switch i % 7 {
				case 0:
					x[i] = float32(r.NormFloat64())
				case 1:
					x[i] = float32(r.NormFloat64()) * 1e-6
				case 2:
					x[i] = float32(r.NormFloat64()) * 1e5
				case 3:
					x[i] = float32(r.IntN(2048)) + 0.5
				case 4:
					x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
				case 5:
					x[i] = float32(math.NaN())
				default:
					x[i] = float32(r.NormFloat64()) * 1e-9
				}
			}
			dst := make([]byte, 2*n+2)
			dst[2*n], dst[2*n+1] = 0xa5, 0x5a
			EncodeF16(dst[:2*n], x)
			if dst[2*n] != 0xa5 || dst[2*n+1] != 0x5a {
				t.Fatalf("n=%d: EncodeF16 wrote past its output", n)
			}
			for i, v := range x {
				got := uint16(dst[2*i]) | uint16(dst[2*i+1])<<8
				want := quant.FP32ToFP16(v)
				if v != v {
					if got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
						t.Fatalf("n=%d [%d]: NaN encoded as %#04x", n, i, got)
					}
					continue
				}
				if got != want {
					t.Fatalf("n=%d [%d]: %v encoded as %#04x, want %#04x", n, i, v, got, want)
				}
			}
		}
	})
}

// BenchmarkGELUErfMul measures the exact GELU of one token's FFN (6656
// values) at every level, in values per second.
func BenchmarkGELUErfMul(b *testing.B) {
	const n = 6656
	r := rand.New(rand.NewPCG(57, 58))
	g, u, y := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i], u[i] = float32(r.NormFloat64()*2), float32(r.NormFloat64())
	}
	for _, l := range Levels() {
		b.Run(l, func(b *testing.B) {
			if err := SetISA(l); err != nil {
				b.Fatal(err)
			}
			defer SetISA(Levels()[len(Levels())-1])
			ref := func(x float32) float32 { // the generic level's, per value
				v := float64(x)
				return float32(0.5 * v * math.Erfc(-v/math.Sqrt2))
			}
			for b.Loop() {
				GELUErfMul(y, g, u, ref)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
		})
	}
}

// BenchmarkGELUTableMul: llama.cpp's table GEGLU over one token's FFN row
// (6,144 for the 1.7B), the table in L2 as in a prefill.
func BenchmarkGELUTableMul(b *testing.B) {
	const n = 6144
	r := rand.New(rand.NewPCG(59, 60))
	g, u, y := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i], u[i] = float32(r.NormFloat64()*2), float32(r.NormFloat64())
	}
	tab := make([]float32, 1<<16)
	for i := range tab {
		tab[i] = quant.FP16ToFP32(uint16(i)) / 2
	}
	for _, l := range Levels() {
		b.Run(l, func(b *testing.B) {
			if err := SetISA(l); err != nil {
				b.Fatal(err)
			}
			defer SetISA(Levels()[len(Levels())-1])
			for b.Loop() {
				GELUTableMul(y, g, u, tab)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
		})
	}
}

// MaxF32 is the Go loop's maximum (NaNs passed over, -Inf for none) and
// Scale the Go loop's products, bit for bit at every level, for every
// length up to 40 and a long row, with NaNs, infinities and signed zeros
// among the values.
func TestMaxF32Scale(t *testing.T) {
	r := rand.New(rand.NewPCG(67, 68))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32, 1e-45}
	var rows [][]float32
	for n := range 41 {
		for k := range 3 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 10)
				if k > 0 && r.IntN(4) == 0 {
					x[i] = specials[r.IntN(len(specials))]
				}
				if k == 2 && r.IntN(2) == 0 {
					x[i] = float32(math.NaN())
				}
			}
			rows = append(rows, x)
		}
	}
	long := make([]float32, 4099)
	for i := range long {
		long[i] = float32(r.NormFloat64())
	}
	long[3001] = 7 // the maximum in a lane of the second accumulator
	rows = append(rows, long)
	forEachLevel(t, func(t *testing.T) {
		for _, x := range rows {
			want := float32(math.Inf(-1))
			for _, v := range x {
				if v > want {
					want = v
				}
			}
			if got := MaxF32(x); math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
				t.Fatalf("MaxF32(%v) = %v, want %v", x, got, want)
			}
			s := float32(r.NormFloat64())
			y := slices.Clone(x)
			Scale(y, s)
			for i, v := range x {
				if w := v * s; math.Float32bits(y[i]) != math.Float32bits(w) && !(y[i] != y[i] && w != w) {
					t.Fatalf("Scale(%v, %v)[%d] = %v, want %v", x, s, i, y[i], w)
				}
			}
		}
	})
}
