package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// TestMatMul checks that the batched, row-tiled products equal MatVec per
// token bit for bit where they use the same kernel, agree with the reference
// within tolerance where a multi-token kernel reorders the sums (Q4_K), and
// leave the padding between output rows alone.
func TestMatMul(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, c := range []struct{ rows, nb, b int }{{1, 1, 1}, {3, 26, 2}, {70, 8, 3}, {9, 26, 5}, {5, 8, 4}, {3, 1, 8}, {2, 26, 9}} {
			name := fmt.Sprintf("rows=%d nb=%d b=%d", c.rows, c.nb, c.b)
			ldo := c.rows + 2
			compare := func(typ string, got func(out []float32), want func(t int, out []float32), mag func(tok, row int) float64) {
				out := make([]float32, c.b*ldo)
				for i := range out {
					out[i] = -1
				}
				got(out)
				for tok := 0; tok < c.b; tok++ {
					ref := make([]float32, c.rows)
					want(tok, ref)
					for i := 0; i < ldo; i++ {
						v := out[tok*ldo+i]
						switch {
						case i < c.rows && mag != nil:
							check(t, fmt.Sprintf("%s %s token %d row %d", typ, name, tok, i), v, ref[i], mag(tok, i), false)
						case i < c.rows && v != ref[i]:
							t.Errorf("%s %s token %d row %d: got %v, want %v", typ, name, tok, i, v, ref[i])
						case i >= c.rows && v != -1:
							t.Errorf("%s %s token %d: wrote padding [%d]", typ, name, tok, i)
						}
					}
				}
			}
			wk := makeWeights(r, layouts[quant.Q4_K], c.nb, c.rows, modeNormal)
			ak := make([]quant.BlockQ8K, 0, c.b*c.nb)
			for range c.b {
				ak = append(ak, makeQ8K(r, c.nb, modeNormal)...)
			}
			compare("Q4_K", func(out []float32) { MatMulQ4K(wk, c.rows, NewQ8KBatch(ak, c.b), out, ldo) },
				func(tok int, out []float32) { MatVecQ4K(wk, c.rows, ak[tok*c.nb:(tok+1)*c.nb], out) },
				func(tok, row int) float64 {
					rb := c.nb * quant.BlockQ4_KSize
					return magnitude(t, layouts[quant.Q4_K], wk[row*rb:(row+1)*rb], q8kFloats(ak[tok*c.nb:(tok+1)*c.nb]))
				})
			w6 := makeWeights(r, layouts[quant.Q6_K], c.nb, c.rows, modeNormal)
			compare("Q6_K", func(out []float32) { MatMulQ6K(w6, c.rows, NewQ8KBatch(ak, c.b), out, ldo) },
				func(tok int, out []float32) { MatVecQ6K(w6, c.rows, ak[tok*c.nb:(tok+1)*c.nb], out) },
				func(tok, row int) float64 {
					rb := c.nb * quant.BlockQ6_KSize
					return magnitude(t, layouts[quant.Q6_K], w6[row*rb:(row+1)*rb], q8kFloats(ak[tok*c.nb:(tok+1)*c.nb]))
				})
			w8 := makeWeights(r, layouts[quant.Q8_0], c.nb, c.rows, modeNormal)
			a8 := make([]quant.BlockQ8_0, 0, c.b*c.nb)
			for range c.b {
				a8 = append(a8, makeQ80(r, c.nb, modeNormal)...)
			}
			compare("Q8_0", func(out []float32) { MatMulQ8_0(w8, c.rows, NewQ80Batch(a8, c.b), out, ldo) },
				func(tok int, out []float32) { MatVecQ8_0(w8, c.rows, a8[tok*c.nb:(tok+1)*c.nb], out) },
				func(tok, row int) float64 {
					rb := c.nb * quant.BlockQ8_0Size
					return magnitude(t, layouts[quant.Q8_0], w8[row*rb:(row+1)*rb], q80Floats(a8[tok*c.nb:(tok+1)*c.nb]))
				})
			n := c.nb * 32
			wf := make([]byte, c.rows*n*2)
			for i := range wf {
				wf[i] = byte(r.Uint32() & 0x3f)
			}
			x := make([]float32, c.b*n)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			quant.RoundBF16(x) // MatVecBF16 and matMulBF16 take bf16 values
			compare("BF16", func(out []float32) { matMulBF16(wf, c.rows, x, c.b, out, ldo) },
				func(tok int, out []float32) { MatVecBF16(wf, c.rows, x[tok*n:(tok+1)*n], out) },
				func(tok, row int) float64 { return magFloat(quant.BF16, wf[row*2*n:(row+1)*2*n], x[tok*n:(tok+1)*n]) })
		}
	})
}

// TestMatMulK runs the batched K-quant paths (4 tokens per weight block where
// available, then single tokens) against the references in every scale mode,
// exactly where every partial sum is an exact float.
func TestMatMulK(t *testing.T) {
	kernels := []struct {
		typ quant.Type
		mm  func([]byte, int, *Q8KBatch, []float32, int)
		ref func([]byte, []quant.BlockQ8K) float32
	}{
		{quant.Q4_K, MatMulQ4K, quant.DotQ4K},
		{quant.Q6_K, MatMulQ6K, quant.DotQ6K},
	}
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		for _, k := range kernels {
			lay := layouts[k.typ]
			for _, mode := range weightModes {
				if mode == modeExactMin && lay.dminOff < 0 {
					continue
				}
				for _, c := range []struct{ rows, nb, b int }{{5, 26, 9}, {3, 1, 4}, {1, 8, 7}} {
					w := makeWeights(r, lay, c.nb, c.rows, mode)
					a := make([]quant.BlockQ8K, 0, c.b*c.nb)
					for range c.b {
						a = append(a, makeQ8K(r, c.nb, mode)...)
					}
					out := make([]float32, c.b*c.rows)
					k.mm(w, c.rows, NewQ8KBatch(a, c.b), out, c.rows)
					rb := c.nb * lay.bs
					for tok := 0; tok < c.b; tok++ {
						at := a[tok*c.nb : (tok+1)*c.nb]
						for i := 0; i < c.rows; i++ {
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v %s rows=%d nb=%d b=%d token %d row %d", k.typ, mode, c.rows, c.nb, c.b, tok, i)
							check(t, what, out[tok*c.rows+i], k.ref(row, at), magnitude(t, lay, row, q8kFloats(at)), mode == modeExactD || mode == modeExactMin)
						}
					}
				}
			}
		}
	})
}

// TestMatMulQ8_0 runs the batched Q8_0 path in every scale mode against the
// reference (exactly in the exact mode).
func TestMatMulQ8_0(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(15, 16))
		lay := layouts[quant.Q8_0]
		for _, mode := range weightModes {
			if mode == modeExactMin {
				continue
			}
			for _, c := range []struct{ rows, nb, b int }{{5, 208, 9}, {3, 1, 4}, {1, 64, 7}} {
				w := makeWeights(r, lay, c.nb, c.rows, mode)
				a := make([]quant.BlockQ8_0, 0, c.b*c.nb)
				for range c.b {
					a = append(a, makeQ80(r, c.nb, mode)...)
				}
				out := make([]float32, c.b*c.rows)
				MatMulQ8_0(w, c.rows, NewQ80Batch(a, c.b), out, c.rows)
				rb := c.nb * lay.bs
				for tok := 0; tok < c.b; tok++ {
					at := a[tok*c.nb : (tok+1)*c.nb]
					for i := 0; i < c.rows; i++ {
						row := w[i*rb : (i+1)*rb]
						what := fmt.Sprintf("Q8_0 %s rows=%d nb=%d b=%d token %d row %d", mode, c.rows, c.nb, c.b, tok, i)
						check(t, what, out[tok*c.rows+i], quant.DotQ8_0(row, at), magnitude(t, lay, row, q80Floats(at)), mode == modeExactD)
					}
				}
			}
		}
	})
}

func TestMatMulBadShapePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MatMulQ4K with len(a) not a multiple of b did not panic")
		}
	}()
	MatMulQ4K(make([]byte, 3*144), 1, NewQ8KBatch(make([]quant.BlockQ8K, 3), 2), make([]float32, 4), 2)
}
