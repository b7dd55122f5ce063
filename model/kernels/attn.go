package kernels

import (
	"fmt"

	"github.com/droidgo/droidgo/model/quant"
)

// DotRows sets out[j] to the dot product of q with row j of k, rows being
// stride floats apart, for j < len(out): the scores of one query against a
// range of cached keys.
func DotRows(q, k []float32, stride int, out []float32) {
	n, d := len(out), len(q)
	if n == 0 {
		return
	}
	if stride < d || len(k) < (n-1)*stride+d {
		panic(fmt.Sprintf("kernels: DotRows: %d rows of %d at stride %d need %d floats, have %d", n, d, stride, (n-1)*stride+d, len(k)))
	}
	if cur.dotRows != nil && d%8 == 0 && d > 0 {
		cur.dotRows(q, k, stride, out)
		return
	}
	for j := range out {
		out[j] = DotF32(q, k[j*stride:j*stride+d])
	}
}

// AxpyRows adds sum_j p[j]*(row j of v) to o, rows being stride floats
// apart: the weighted sum of a range of cached values.
func AxpyRows(p, v []float32, stride int, o []float32) {
	n, d := len(p), len(o)
	if n == 0 || d == 0 {
		return
	}
	if stride < d || len(v) < (n-1)*stride+d {
		panic(fmt.Sprintf("kernels: AxpyRows: %d rows of %d at stride %d need %d floats, have %d", n, d, stride, (n-1)*stride+d, len(v)))
	}
	if cur.axpyRows != nil && d%8 == 0 {
		cur.axpyRows(p, v, stride, o)
		return
	}
	for j, pj := range p {
		Axpy(pj, v[j*stride:j*stride+d], o)
	}
}

// RoundF16 rounds every element of x to the nearest IEEE half (ties to
// even), exactly as quant.RoundF16 (the activations of an F16 product,
// which ggml rounds the same way).
func RoundF16(x []float32) {
	n := len(x) &^ 7
	if cur.roundF16 != nil && n > 0 {
		cur.roundF16(x[:n])
		x = x[n:]
	}
	quant.RoundF16(x)
}

// QuantizeQ8_0 is quant.QuantizeQ8_0 (bit for bit): x holds 32*len(y)
// floats, the activations of a Q8_0 or Q4_0 product.
func QuantizeQ8_0(x []float32, y []quant.BlockQ8_0) {
	if len(x) < 32*len(y) {
		panic(fmt.Sprintf("kernels: QuantizeQ8_0: %d blocks need %d floats, have %d", len(y), 32*len(y), len(x)))
	}
	if cur.q80Quant != nil && len(y) > 0 {
		cur.q80Quant(x, y)
		return
	}
	quant.QuantizeQ8_0(x, y)
}

// GELUErfMul sets y[i] = gelu(g[i]) * u[i] for the exact (erf) GELU,
// 0.5*x*(1+erf(x/sqrt2)), the GEGLU of the reference model. The assembly
// form evaluates it in float32 (a few ulps from the float64 reference ref,
// which handles the elements it does not: ref(x) must be that reference).
func GELUErfMul(y, g, u []float32, ref func(float32) float32) {
	n := len(y)
	g, u = g[:n], u[:n]
	m := n &^ 7
	if cur.geluErf != nil && m > 0 {
		cur.geluErf(y[:m], g[:m], u[:m])
	} else {
		m = 0
	}
	for i := m; i < n; i++ {
		y[i] = ref(g[i]) * u[i]
	}
}
