package kernels

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

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

// RoundBF16 is quant.RoundBF16 (each value rounded to bf16 and back, to
// nearest even; NaNs stay NaNs, quieted), bit for bit: the activations of
// BF16 weights.
func RoundBF16(x []float32) {
	n := len(x) &^ 7
	if cur.roundBF16 != nil && n > 0 {
		cur.roundBF16(x[:n])
		x = x[n:]
	}
	quant.RoundBF16(x)
}

// EncodeF16 writes the IEEE halves of x, little-endian, to dst[:2*len(x)],
// exactly as quant.FP32ToFP16 (NaNs stay NaNs, their payloads may differ):
// keys and values going into an f16 KV cache.
func EncodeF16(dst []byte, x []float32) {
	if len(dst) < 2*len(x) {
		panic(fmt.Sprintf("kernels: EncodeF16: %d floats need %d bytes, have %d", len(x), 2*len(x), len(dst)))
	}
	n := len(x) &^ 7
	if cur.encodeF16 != nil && n > 0 {
		cur.encodeF16(dst, x[:n])
	} else {
		n = 0
	}
	for i := n; i < len(x); i++ {
		h := quant.FP32ToFP16(x[i])
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
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

// GELUTableMul sets y[i] = gelu(g[i]) * u[i] as llama.cpp's CPU GEGLU
// does: tab holds the GELU of each of the 65536 halves, indexed by their
// bits, and g[i] is rounded to the nearest half (ties to even) to look it
// up; g[i] <= -10 gives 0 and g[i] >= 10 gives g[i]*u[i]. Bit for bit the
// same at every level.
func GELUTableMul(y, g, u, tab []float32) {
	n := len(y)
	g, u, tab = g[:n], u[:n], tab[:1<<16]
	m := n &^ 7
	if cur.geluTab != nil && m > 0 {
		cur.geluTab(y[:m], g[:m], u[:m], tab)
	} else {
		m = 0
	}
	for i := m; i < n; i++ {
		x := g[i]
		b := math.Float32bits(x)
		abs := b & 0x7fffffff
		switch {
		case x <= -10:
			y[i] = 0
		case x >= 10:
			y[i] = x * u[i]
		case abs >= 0x38800000 && abs < 0x41200000:
			// |x| in [2^-14, 10): a normal half. Round the 13 dropped
			// mantissa bits to nearest even (a carry into the exponent
			// is the right result) and rebias the exponent by 127-15;
			// equal to quant.FP32ToFP16 there, without its branches.
			h := (abs+0xfff+(abs>>13)&1)>>13 - 112<<10
			y[i] = tab[uint16(b>>16)&0x8000|uint16(h)] * u[i]
		default:
			y[i] = tab[quant.FP32ToFP16(x)] * u[i]
		}
	}
}

// f16Rows is the row block of MatMulF16Strided: 64 keys of a 256-wide head
// are 32 KiB, 64 value rows of 2048 slots 256 KiB.
const f16Rows = 64

// f16Wide is the longest row MatMulF16Strided runs 16 vectors at a time:
// the kernel reads every row against the 16 vectors' elements, which must
// stay in L1 (16 x 512 floats, 32 KiB); with 2048, reading them from L2
// for every row, it ran at 0.57-0.59 of groups of 4 (BenchmarkAttnF16's
// values). Attention's value products are blocks of 256 positions.
const f16Wide = 512

// MatMulF16Strided sets out[t*ldo+r] to quant.DotF16(row r of w, x[t*xs :
// t*xs+n]) for t < b and r < rows, or adds it there when acc is set, each
// row being n IEEE halves and row r starting ws halves after row r-1: the
// attention products over an f16 KV cache, whose keys are rows of the head
// dimension and whose values, transposed, rows of a run of slots inside
// rows of the cache's capacity. Like MatMulF16 it uses x as given.
func MatMulF16Strided(w []byte, ws, n, rows int, x []float32, xs, b int, out []float32, ldo int, acc bool) {
	if rows <= 0 || b <= 0 {
		return
	}
	if n < 0 || ws < n || xs < n || ldo < rows || len(w) < 2*((rows-1)*ws+n) || len(x) < (b-1)*xs+n || len(out) < (b-1)*ldo+rows {
		panic(fmt.Sprintf("kernels: MatMulF16Strided: %d rows of %d at stride %d (%d bytes), %d tokens at stride %d (%d floats), ldo %d (%d outputs)",
			rows, n, ws, len(w), b, xs, len(x), ldo, len(out)))
	}
	t := 0
	if cur.f164 != nil && n > 0 {
		// Blocks of f16Rows rows, which stay in L2 (and the keys' in L1)
		// while every group of 4 vectors passes, so the rows are read from
		// memory once, not once per group. Cutting the rows' length too
		// measured slower for 4 vectors, and a vector's products must not
		// depend on the vectors that come with it (the engine's results do
		// not depend on how a prompt is split into batches): rows are only
		// ever split into whole rows.
		// Whole groups of 16 vectors go first where the level has a
		// kernel for them; it reads each row once for all 16.
		if cur.f1616 != nil && n <= f16Wide {
			t = matMulF16x16(w, ws, n, rows, x, xs, b, out, ldo, acc)
		}
		b4 := b &^ 3
		for r0 := 0; r0 < rows; r0 += f16Rows {
			r1 := min(rows, r0+f16Rows)
			for t := t; t < b4; t += 4 {
				cur.f164(w[2*r0*ws:], ws, x[t*xs:], xs, n, r1-r0, out[t*ldo+r0:], ldo, acc)
			}
		}
		t = b4
	}
	for ; t < b; t++ {
		xt, o := x[t*xs:t*xs+n], out[t*ldo:t*ldo+rows]
		for r := range o {
			// The row's product goes straight to o[r] (a temporary would
			// escape through the indirect call: an allocation per call).
			old := o[r]
			o[r] = 0
			if n > 0 {
				cur.f16(w[2*r*ws:2*(r*ws+n)], 1, xt, o[r:r+1])
			}
			if acc {
				o[r] += old
			}
		}
	}
}

// f16x16Stride is the floats from one vector to the next in what f1616
// reads (the kernel's XS): fixed, so that it addresses the vectors by
// displacement, and one cache line more than f16Wide, so that they start
// on lines that do not share L1 sets.
const f16x16Stride = f16Wide + 16

// f16Pool holds matMulF16x16's copies of 16 vectors.
var f16Pool = sync.Pool{New: func() any {
	s := make([]float32, 16*f16x16Stride+16)
	return &s
}}

// matMulF16x16 is MatMulF16Strided's product for the first b&^15 vectors,
// 16 at a time through cur.f1616 (n <= f16Wide), and returns how many it
// did. The vectors are copied first, each to a row of scratch that starts
// on a cache line (in place, the engine's score rows, whose length is any
// span's, make every load cross a line: 41.6 GMAC/cpu-s against 52.9
// aligned).
func matMulF16x16(w []byte, ws, n, rows int, x []float32, xs, b int, out []float32, ldo int, acc bool) int {
	if b < 16 {
		return 0
	}
	p := f16Pool.Get().(*[]float32)
	buf := *p
	buf = buf[(64-uintptr(unsafe.Pointer(&buf[0]))&63)&63/4:]
	t := 0
	for ; t+16 <= b; t += 16 {
		for i := range 16 {
			copy(buf[i*f16x16Stride:i*f16x16Stride+n], x[(t+i)*xs:])
		}
		cur.f1616(w, ws, buf, n, rows, out[t*ldo:], ldo, acc)
	}
	f16Pool.Put(p)
	return t
}

// MaxF32 returns the largest element of x (-Inf for none), passing over
// NaNs: the maximum of a softmax row.
func MaxF32(x []float32) float32 {
	mx := float32(math.Inf(-1))
	n := len(x) &^ 7
	if cur.maxF32 != nil && n > 0 {
		mx = cur.maxF32(x[:n])
	} else {
		n = 0
	}
	for _, v := range x[n:] {
		if v > mx {
			mx = v
		}
	}
	return mx
}

// Scale sets x[i] *= s.
func Scale(x []float32, s float32) {
	n := len(x) &^ 7
	if cur.scale != nil && n > 0 {
		cur.scale(x[:n], s)
	} else {
		n = 0
	}
	for i := n; i < len(x); i++ {
		x[i] *= s
	}
}

// ExpSum sets x[i] = exp(x[i]*scale - mx) and returns the sum of the
// results (in float64): the exponentials of a softmax row whose scaled
// maximum is mx. The reference form is float32(math.Exp(float64(...)));
// assembly forms evaluate exp in float32 within a few ulps of it, and give
// 0 where the reference gives subnormals (below e^-87).
func ExpSum(x []float32, scale, mx float32) float64 {
	if len(x) == 0 {
		return 0
	}
	if cur.expSum != nil {
		return cur.expSum(x, scale, mx)
	}
	var sum float64
	for i, v := range x {
		p := float32(math.Exp(float64(v*scale - mx)))
		x[i] = p
		sum += float64(p)
	}
	return sum
}
