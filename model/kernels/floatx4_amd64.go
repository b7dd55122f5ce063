//go:build !purego

package kernels

// The 4-token float kernels of floatx4_amd64.s: a panel of rows weight rows
// of n elements (row stride ws elements) times 4 activation vectors of n
// floats (stride xs floats); out[t*ldo+r] is set to the product of row r and
// token t, or has it added when acc is set.

//go:noescape
func bf16AVX2x4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)

//go:noescape
func f16AVX2x4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)

// The two-row one-token float kernels of floatmv_amd64.s: rows r and r+half
// of n elements times x into out[r] and out[r+half], for r < half (> 0).

//go:noescape
func bf16AVX2h2(w *byte, x *float32, n, half int, out *float32)

//go:noescape
func f16AVX2h2(w *byte, x *float32, n, half int, out *float32)
