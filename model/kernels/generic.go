package kernels

import "github.com/droidgo/droidgo/model/quant"

// genericTable is the pure-Go level: the quant references applied row by row.
var genericTable = table{
	q4k: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		rowsK(w, rows, a, out, quant.BlockQ4_KSize, quant.DotQ4K)
	},
	q5k: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		rowsK(w, rows, a, out, quant.BlockQ5_KSize, quant.DotQ5K)
	},
	q6k: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		rowsK(w, rows, a, out, quant.BlockQ6_KSize, quant.DotQ6K)
	},
	q80: func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
		rows0(w, rows, a, out, quant.BlockQ8_0Size, quant.DotQ8_0)
	},
	q40: func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
		rows0(w, rows, a, out, quant.BlockQ4_0Size, quant.DotQ4_0)
	},
	f32: func(w []byte, rows int, x []float32, out []float32) {
		rowsF(w, rows, x, out, 4, quant.DotF32)
	},
	f16: func(w []byte, rows int, x []float32, out []float32) {
		rowsF(w, rows, x, out, 2, quant.DotF16)
	},
	bf16: func(w []byte, rows int, x []float32, out []float32) {
		rowsF(w, rows, x, out, 2, quant.DotBF16)
	},
	dot:  dotGeneric,
	axpy: axpyGeneric,
}

func rowsK(w []byte, rows int, a []quant.BlockQ8K, out []float32, bs int, dot func([]byte, []quant.BlockQ8K) float32) {
	n := len(a) * bs
	for r := 0; r < rows; r++ {
		out[r] = dot(w[r*n:(r+1)*n], a)
	}
}

func rows0(w []byte, rows int, a []quant.BlockQ8_0, out []float32, bs int, dot func([]byte, []quant.BlockQ8_0) float32) {
	n := len(a) * bs
	for r := 0; r < rows; r++ {
		out[r] = dot(w[r*n:(r+1)*n], a)
	}
}

func rowsF(w []byte, rows int, x []float32, out []float32, es int, dot func([]byte, []float32) float32) {
	n := len(x) * es
	for r := 0; r < rows; r++ {
		out[r] = dot(w[r*n:(r+1)*n], x)
	}
}

func dotGeneric(a, b []float32) float32 {
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

func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}
