package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// TestBatchInvariant checks what the engine's many-sequence decoding relies
// on, for every product a level claims it for (BatchInvariantFor): a
// token's products are bit for bit the same whether MatVec computes it
// alone over the whole matrix or MatMul computes it in a batch of any size,
// at any place in the batch, over any range of rows (the engine splits
// products into row chunks; the matrix-matrix and multi-token kernels take
// over from a number of tokens on, and leave tails of tokens and rows).
// What every level must keep, claim or not, is checked for every product:
// a token alone gives each row the same bits over any range of rows, since
// the threads cut the rows where they may.
func TestBatchInvariant(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		if !curInvariant {
			t.Logf("level %s claims no batch invariance (its batched kernels sum in another order than the one-token ones, or were not checked): one token's row ranges only", ISA())
		}
		r := rand.New(rand.NewPCG(41, 42))
		var ak []quant.BlockQ8K
		var a0 []quant.BlockQ8_0
		var xf []float32
		kq := func(typ quant.Type, x8 bool) func(r *rand.Rand, rows, k int) ([]byte, int) {
			return func(r *rand.Rand, rows, k int) ([]byte, int) {
				lay := layouts[typ]
				w := makeWeights(r, lay, k/lay.n, rows, modeNormal)
				if x8 {
					p := make([]byte, len(w))
					if err := Repack(typ, p, w, rows, k); err != nil {
						t.Fatal(err)
					}
					w = p
				}
				return w, k / lay.n * lay.bs
			}
		}
		q8k := func(r *rand.Rand, b, k int) {
			ak = ak[:0]
			for range b {
				ak = append(ak, makeQ8K(r, k/256, modeNormal)...)
			}
		}
		q80 := func(r *rand.Rand, b, k int) {
			a0 = a0[:0]
			for range b {
				a0 = append(a0, makeQ80(r, k/32, modeNormal)...)
			}
		}
		floats := func(r *rand.Rand, b, k int) {
			xf = xf[:0]
			for range b * k {
				xf = append(xf, quant.FP16ToFP32(quant.FP32ToFP16(float32(r.NormFloat64()))))
			}
		}
		halves := func(r *rand.Rand, rows, k int) ([]byte, int) {
			w := make([]byte, rows*k*2)
			for i := 0; i < len(w); i += 2 {
				v := quant.FP32ToFP16(float32(r.NormFloat64() * 0.05))
				w[i], w[i+1] = byte(v), byte(v>>8)
			}
			return w, 2 * k
		}
		f32s := func(r *rand.Rand, rows, k int) ([]byte, int) {
			w := make([]byte, rows*k*4)
			for i := 0; i < len(w); i += 4 {
				v := math.Float32bits(float32(r.NormFloat64() * 0.05))
				w[i], w[i+1], w[i+2], w[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			}
			return w, 4 * k
		}
		long := []int{256, 2048, 6656}
		long0 := []int{32, 2048, 6656}
		floatKs := []int{5, 37, 2048, floatChunk + 40}
		if testing.Short() {
			long, long0, floatKs = []int{2048}, []int{2048}, []int{37, 2048}
		}
		for _, c := range []struct {
			name  string
			typ   quant.Type
			x8    bool
			group int
			mk    func(r *rand.Rand, rows, k int) ([]byte, int)
			acts  func(r *rand.Rand, b, k int)
			mm    func(w []byte, rows, b, k int, out []float32, ldo int)
			mv    func(w []byte, rows, t, k int, out []float32)
			ks    []int
		}{
			{"Q4_K", quant.Q4_K, false, 1, kq(quant.Q4_K, false), q8k,
				func(w []byte, rows, b, k int, out []float32, ldo int) {
					MatMulQ4K(w, rows, NewQ8KBatch(ak[:b*k/256], b), out, ldo)
				},
				func(w []byte, rows, t, k int, out []float32) { MatVecQ4K(w, rows, ak[t*k/256:(t+1)*k/256], out) }, long},
			{"Q5_K", quant.Q5_K, false, 1, kq(quant.Q5_K, false), q8k,
				func(w []byte, rows, b, k int, out []float32, ldo int) {
					MatMulQ5K(w, rows, NewQ8KBatch(ak[:b*k/256], b), out, ldo)
				},
				func(w []byte, rows, t, k int, out []float32) { MatVecQ5K(w, rows, ak[t*k/256:(t+1)*k/256], out) }, long},
			{"Q6_K", quant.Q6_K, false, 1, kq(quant.Q6_K, false), q8k,
				func(w []byte, rows, b, k int, out []float32, ldo int) {
					MatMulQ6K(w, rows, NewQ8KBatch(ak[:b*k/256], b), out, ldo)
				},
				func(w []byte, rows, t, k int, out []float32) { MatVecQ6K(w, rows, ak[t*k/256:(t+1)*k/256], out) }, long},
			{"Q4_K x8", quant.Q4_K, true, Interleave, kq(quant.Q4_K, true), q8k,
				func(w []byte, rows, b, k int, out []float32, ldo int) {
					MatMulQ4Kx8(w, rows, NewQ8KBatch(ak[:b*k/256], b), out, ldo)
				},
				func(w []byte, rows, t, k int, out []float32) { MatVecQ4Kx8(w, rows, ak[t*k/256:(t+1)*k/256], out) }, long},
			{"Q6_K x8", quant.Q6_K, true, Interleave, kq(quant.Q6_K, true), q8k,
				func(w []byte, rows, b, k int, out []float32, ldo int) {
					MatMulQ6Kx8(w, rows, NewQ8KBatch(ak[:b*k/256], b), out, ldo)
				},
				func(w []byte, rows, t, k int, out []float32) { MatVecQ6Kx8(w, rows, ak[t*k/256:(t+1)*k/256], out) }, long},
			{"Q8_0", quant.Q8_0, false, 1, kq(quant.Q8_0, false), q80,
				func(w []byte, rows, b, k int, out []float32, ldo int) {
					MatMulQ8_0(w, rows, NewQ80Batch(a0[:b*k/32], b), out, ldo)
				},
				func(w []byte, rows, t, k int, out []float32) { MatVecQ8_0(w, rows, a0[t*k/32:(t+1)*k/32], out) }, long0},
			{"Q8_0 x8", quant.Q8_0, true, Interleave, kq(quant.Q8_0, true), q80,
				func(w []byte, rows, b, k int, out []float32, ldo int) {
					MatMulQ8_0x8(w, rows, NewQ80Batch(a0[:b*k/32], b), out, ldo)
				},
				func(w []byte, rows, t, k int, out []float32) { MatVecQ8_0x8(w, rows, a0[t*k/32:(t+1)*k/32], out) }, long0[1:]},
			{"Q4_0", quant.Q4_0, false, 1, kq(quant.Q4_0, false), q80,
				func(w []byte, rows, b, k int, out []float32, ldo int) {
					MatMulQ4_0(w, rows, NewQ80Batch(a0[:b*k/32], b), out, ldo)
				},
				func(w []byte, rows, t, k int, out []float32) { MatVecQ4_0(w, rows, a0[t*k/32:(t+1)*k/32], out) }, long0},
			{"F16", quant.F16, false, 1, halves, floats,
				func(w []byte, rows, b, k int, out []float32, ldo int) { MatMulF16(w, rows, xf[:b*k], b, out, ldo) },
				func(w []byte, rows, t, k int, out []float32) { MatVecF16(w, rows, xf[t*k:(t+1)*k], out) }, floatKs},
			{"BF16", quant.BF16, false, 1, halves, floats,
				func(w []byte, rows, b, k int, out []float32, ldo int) { matMulBF16(w, rows, xf[:b*k], b, out, ldo) },
				func(w []byte, rows, t, k int, out []float32) { MatVecBF16(w, rows, xf[t*k:(t+1)*k], out) }, floatKs},
			{"F32", quant.F32, false, 1, f32s, floats,
				func(w []byte, rows, b, k int, out []float32, ldo int) { MatMulF32(w, rows, xf[:b*k], b, out, ldo) },
				func(w []byte, rows, t, k int, out []float32) { MatVecF32(w, rows, xf[t*k:(t+1)*k], out) }, floatKs},
		} {
			for _, k := range c.ks {
				rows := 72
				if k > 4096 {
					rows = 40
				}
				w, rb := c.mk(r, rows, k)
				batches := []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 64}
				if testing.Short() || k > 4096 {
					batches = []int{1, 3, 4, 5, 16, 17}
				}
				if !BatchInvariantFor(c.typ, c.x8) {
					batches = []int{1}
				}
				maxB := batches[len(batches)-1]
				c.acts(r, maxB, k)
				// Each token alone, over the whole matrix.
				want := make([]float32, maxB*rows)
				for tok := range maxB {
					c.mv(w, rows, tok, k, want[tok*rows:(tok+1)*rows])
				}
				// Row ranges as the engine cuts them, and odd ones.
				g := c.group
				ranges := [][2]int{{0, rows}, {0, 32}, {32, rows}, {g, 3 * g}, {rows - g, rows}}
				for _, b := range batches {
					for _, rr := range ranges {
						r0, r1 := rr[0], rr[1]
						ldo := r1 - r0 + 3
						out := make([]float32, b*ldo)
						c.mm(w[r0*rb:r1*rb], r1-r0, b, k, out, ldo)
						for tok := range b {
							for i := r0; i < r1; i++ {
								got, exp := out[tok*ldo+i-r0], want[tok*rows+i]
								if math.Float32bits(got) != math.Float32bits(exp) {
									t.Fatalf("%s K=%d: batch of %d, rows %d..%d: token %d row %d is %v in the batch, %v alone",
										c.name, k, b, r0, r1, tok, i, got, exp)
								}
							}
						}
					}
				}
			}
		}
	})
}
