//go:build !purego

package kernels

import "github.com/droidgo/droidgo/model/quant"

// x8DOT adds the one-token SDOT kernels for the interleaved Q4_K, Q6_K and
// Q8_0 layouts (x8_arm64.s) to a table of the dotprod level or above, which
// makes RepackPays true for the three types there.
func x8DOT(t table) table {
	t.q4kx8 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q4kx8DOT(&w[0], &a[0], len(a), rows/Interleave, &out[0])
	}
	t.q6kx8 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q6kx8DOT(&w[0], &a[0], len(a), rows/Interleave, &out[0])
	}
	t.q80x8 = func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
		q80x8DOT(&w[0], &a[0], len(a), rows/Interleave, &out[0])
	}
	return t
}

// The kernels multiply groups groups of 8 interleaved rows of nb blocks each
// by one activation vector, writing 8 results per group.

//go:noescape
func q4kx8DOT(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)

//go:noescape
func q6kx8DOT(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)

//go:noescape
func q80x8DOT(w *byte, a *quant.BlockQ8_0, nb, groups int, out *float32)
