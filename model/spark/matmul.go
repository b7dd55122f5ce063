package spark

import "github.com/droidgo/droidgo/model/quant"

// acts is a batch of activation rows (B rows of n floats) with lazily built
// encodings for each weight type, so inputs shared by several weights (QKV
// and gate, FFN gate and up) are converted once.
type acts struct {
	x    []float32 // B*n, row-major
	n, b int
	f16  []float32
	bf16 []float32
	q80  []quant.BlockQ8_0
	q8k  []quant.BlockQ8K
	have [4]bool
}

func (a *acts) reset(x []float32, b, n int) {
	a.x, a.b, a.n = x[:b*n], b, n
	a.have = [4]bool{}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// prepare builds the activation encoding that typ's dot product uses.
func (a *acts) prepare(typ quant.Type) {
	switch typ {
	case quant.F16:
		if !a.have[0] {
			a.f16 = grow(a.f16, len(a.x))
			copy(a.f16, a.x)
			quant.RoundF16(a.f16)
			a.have[0] = true
		}
	case quant.BF16:
		if !a.have[1] {
			a.bf16 = grow(a.bf16, len(a.x))
			copy(a.bf16, a.x)
			quant.RoundBF16(a.bf16)
			a.have[1] = true
		}
	case quant.Q8_0, quant.Q4_0:
		if !a.have[2] {
			a.q80 = grow(a.q80, len(a.x)/32)
			for t := 0; t < a.b; t++ {
				quant.QuantizeQ8_0(a.x[t*a.n:(t+1)*a.n], a.q80[t*a.n/32:(t+1)*a.n/32])
			}
			a.have[2] = true
		}
	case quant.Q4_K, quant.Q5_K, quant.Q6_K:
		if !a.have[3] {
			a.q8k = grow(a.q8k, len(a.x)/quant.QK_K)
			for t := 0; t < a.b; t++ {
				quant.QuantizeQ8K(a.x[t*a.n:(t+1)*a.n], a.q8k[t*a.n/quant.QK_K:(t+1)*a.n/quant.QK_K])
			}
			a.have[3] = true
		}
	}
}

// matmul computes out[t*w.Rows+r] = W[r] . x[t] for every row r and batch
// row t, splitting rows across the pool. With float set, weights are
// dequantised and dotted with the unrounded float32 activations; otherwise
// activations are rounded/quantised to the weight's dot type as llama.cpp does.
func (e *Engine) matmul(w *Weight, a *acts, out []float32) {
	rows, n, B := w.Rows, a.n, a.b
	if e.opts.FloatActivations && w.Type != quant.F32 {
		e.pool.run(rows, 0, func(worker, lo, hi int) {
			buf := e.scratch[worker][:n]
			for r := lo; r < hi; r++ {
				quant.DequantizeRow(w.Type, w.Row(r), buf)
				for t := 0; t < B; t++ {
					out[t*rows+r] = dotF32(buf, a.x[t*n:(t+1)*n])
				}
			}
		})
		return
	}
	a.prepare(w.Type)
	nb32, nbK := n/32, n/quant.QK_K
	e.pool.run(rows, 0, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			row := w.Row(r)
			for t := 0; t < B; t++ {
				var v float32
				switch w.Type {
				case quant.F32:
					v = quant.DotF32(row, a.x[t*n:(t+1)*n])
				case quant.F16:
					v = quant.DotF16(row, a.f16[t*n:(t+1)*n])
				case quant.BF16:
					v = quant.DotBF16(row, a.bf16[t*n:(t+1)*n])
				case quant.Q8_0:
					v = quant.DotQ8_0(row, a.q80[t*nb32:(t+1)*nb32])
				case quant.Q4_0:
					v = quant.DotQ4_0(row, a.q80[t*nb32:(t+1)*nb32])
				case quant.Q4_K:
					v = quant.DotQ4K(row, a.q8k[t*nbK:(t+1)*nbK])
				case quant.Q5_K:
					v = quant.DotQ5K(row, a.q8k[t*nbK:(t+1)*nbK])
				case quant.Q6_K:
					v = quant.DotQ6K(row, a.q8k[t*nbK:(t+1)*nbK])
				}
				out[t*rows+r] = v
			}
		}
	})
}

func dotF32(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	b = b[:len(a)]
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
