package spark

import (
	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
)

// actKind is the encoding a weight type's dot product wants its
// activations in.
type actKind int

const (
	actF32  actKind = iota // used as is
	actF16                 // rounded to f16
	actBF16                // rounded to bf16
	actQ80                 // Q8_0 blocks of 32
	actQ8K                 // Q8_K blocks of 256
	nActKinds
)

func kindOf(t quant.Type) actKind {
	switch t {
	case quant.F16:
		return actF16
	case quant.BF16:
		return actBF16
	case quant.Q8_0, quant.Q4_0:
		return actQ80
	case quant.Q4_K, quant.Q5_K, quant.Q6_K:
		return actQ8K
	}
	return actF32
}

// blockElems is the granularity at which a kind can be encoded piecewise.
func (k actKind) blockElems() int {
	switch k {
	case actQ80:
		return 32
	case actQ8K:
		return quant.QK_K
	}
	return 1
}

// acts is a batch of activation rows (b rows of n floats) with the
// encodings for each weight type, built once per input and shared by every
// weight that reads it (QKV and gate, FFN gate and up).
type acts struct {
	x    []float32 // b*n, row-major
	n, b int
	f16  []float32
	bf16 []float32
	q80  []quant.BlockQ8_0
	q8k  []quant.BlockQ8K
	// q8kb is q8k as the K-quant matrix products take it: what their
	// kernels lay out of it is built once per input for every product and
	// row chunk that reads it.
	q8kb kernels.Q8KBatch
	// q80b is q80 as the Q8_0 and Q4_0 matrix products take it (see q8kb).
	q80b kernels.Q80Batch
	// bf16b is bf16 as the BF16 matrix products take it (see q8kb).
	bf16b kernels.BF16Batch
	have  [nActKinds]bool
}

func (a *acts) reset(x []float32, b, n int) {
	a.x, a.b, a.n = x[:b*n], b, n
	a.have = [nActKinds]bool{}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// alloc sizes the buffer of kind k for the current shape (no-op when large
// enough) so that workers can then encode disjoint pieces concurrently.
func (a *acts) alloc(k actKind) {
	switch k {
	case actF16:
		a.f16 = grow(a.f16, len(a.x))
	case actBF16:
		a.bf16 = grow(a.bf16, len(a.x))
		a.bf16b.Reset(a.bf16, a.b)
	case actQ80:
		a.q80 = grow(a.q80, len(a.x)/32)
		a.q80b.Reset(a.q80, a.b)
	case actQ8K:
		a.q8k = grow(a.q8k, len(a.x)/quant.QK_K)
		a.q8kb.Reset(a.q8k, a.b)
	}
}

// encode encodes elements [lo, hi) of row t as kind k; lo and hi must be
// multiples of k.blockElems(). Blocks are independent, so encoding a row
// piecewise gives exactly the whole-row result.
func (a *acts) encode(k actKind, t, lo, hi int) {
	a.encodeFrom(k, t, lo, a.x[t*a.n+lo:t*a.n+hi])
}

// encodeFrom is encode with the elements read from src instead of from
// a.x (where they need not be).
func (a *acts) encodeFrom(k actKind, t, lo int, src []float32) {
	i, j := t*a.n+lo, t*a.n+lo+len(src)
	switch k {
	case actF16:
		copy(a.f16[i:j], src)
		kernels.RoundF16(a.f16[i:j])
	case actBF16:
		copy(a.bf16[i:j], src)
		kernels.RoundBF16(a.bf16[i:j])
	case actQ80:
		kernels.QuantizeQ8_0(src, a.q80[i/32:j/32])
	case actQ8K:
		kernels.QuantizeQ8K(src, a.q8k[i/quant.QK_K:j/quant.QK_K])
	}
}

// prepare builds the encoding typ's dot product uses for every row.
func (a *acts) prepare(typ quant.Type) {
	k := kindOf(typ)
	if k == actF32 || a.have[k] {
		return
	}
	a.alloc(k)
	for t := 0; t < a.b; t++ {
		a.encode(k, t, 0, a.n)
	}
	a.have[k] = true
}

// mulRows computes out[t*ldo+r] = W[r] . x[t] for r in [r0, r1) and every
// batch row t, with a already prepared for w.Type (unless float is set:
// then weights are dequantised into buf and dotted with the unrounded
// activations). One batch row runs the matrix-vector kernels; several run
// the batched ones, which read each weight tile once for all of them.
func mulRows(w *Weight, a *acts, r0, r1 int, out []float32, ldo int, float bool, buf []float32) {
	if r1 > r0 {
		mulRowsTo(w, a, r0, r1, out[r0:], ldo, float, buf)
	}
}

// mulRowsTo is mulRows writing row r of batch row t to out[t*ldo+r-r0].
func mulRowsTo(w *Weight, a *acts, r0, r1 int, out []float32, ldo int, float bool, buf []float32) {
	B, n := a.b, a.n
	if r1 <= r0 {
		return
	}
	if float && w.Type != quant.F32 {
		buf = buf[:n]
		var rb []byte
		for r := r0; r < r1; r++ {
			quant.DequantizeRow(w.Type, w.rowTo(r, &rb), buf)
			for t := 0; t < B; t++ {
				out[t*ldo+r-r0] = kernels.DotF32(buf, a.x[t*n:(t+1)*n])
			}
		}
		return
	}
	rb := w.rowBytes
	wd := w.Data[r0*rb : r1*rb]
	rows := r1 - r0
	if B == 1 {
		o := out[:r1-r0]
		switch w.Type {
		case quant.F32:
			kernels.MatVecF32(wd, rows, a.x, o)
		case quant.F16:
			kernels.MatVecF16(wd, rows, a.f16, o)
		case quant.BF16:
			kernels.MatVecBF16(wd, rows, a.bf16, o)
		case quant.Q8_0:
			if w.x8 {
				kernels.MatVecQ8_0x8(wd, rows, a.q80, o)
				return
			}
			kernels.MatVecQ8_0(wd, rows, a.q80, o)
		case quant.Q4_0:
			kernels.MatVecQ4_0(wd, rows, a.q80, o)
		case quant.Q4_K:
			if w.x8 {
				kernels.MatVecQ4Kx8(wd, rows, a.q8k, o)
				return
			}
			kernels.MatVecQ4K(wd, rows, a.q8k, o)
		case quant.Q5_K:
			kernels.MatVecQ5K(wd, rows, a.q8k, o)
		case quant.Q6_K:
			if w.x8 {
				kernels.MatVecQ6Kx8(wd, rows, a.q8k, o)
				return
			}
			kernels.MatVecQ6K(wd, rows, a.q8k, o)
		}
		return
	}
	o := out[:(B-1)*ldo+r1-r0]
	switch w.Type {
	case quant.F32:
		kernels.MatMulF32(wd, rows, a.x, B, o, ldo)
	case quant.F16:
		kernels.MatMulF16(wd, rows, a.f16, B, o, ldo)
	case quant.BF16:
		kernels.MatMulBF16(wd, rows, &a.bf16b, o, ldo)
	case quant.Q8_0:
		if w.x8 {
			kernels.MatMulQ8_0x8(wd, rows, &a.q80b, o, ldo)
			return
		}
		kernels.MatMulQ8_0(wd, rows, &a.q80b, o, ldo)
	case quant.Q4_0:
		kernels.MatMulQ4_0(wd, rows, &a.q80b, o, ldo)
	case quant.Q4_K:
		if w.x8 {
			kernels.MatMulQ4Kx8(wd, rows, &a.q8kb, o, ldo)
			return
		}
		kernels.MatMulQ4K(wd, rows, &a.q8kb, o, ldo)
	case quant.Q5_K:
		kernels.MatMulQ5K(wd, rows, &a.q8kb, o, ldo)
	case quant.Q6_K:
		if w.x8 {
			kernels.MatMulQ6Kx8(wd, rows, &a.q8kb, o, ldo)
			return
		}
		kernels.MatMulQ6K(wd, rows, &a.q8kb, o, ldo)
	}
}
