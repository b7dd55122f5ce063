//go:build !purego

package kernels

// The 4-token float kernels of floatx4_arm64.s, for an even number of rows
// and n positive; neonFloatX4 completes them to the floatX4 contract.

//go:noescape
func bf16NEONx4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)

//go:noescape
func f16NEONx4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)

// neonFloatX4 wraps a NEON 4-token kernel (k) and the matching one-token
// kernel (mv) as a floatX4: the kernel runs the row pairs, and an odd last
// row goes through mv once per token.
func neonFloatX4(k func(*byte, int, *float32, int, int, int, *float32, int, bool), mv func(*byte, *float32, int, int, *float32)) floatX4 {
	return func(w []byte, ws int, x []float32, xs, n, rows int, out []float32, ldo int, acc bool) {
		if pairs := rows &^ 1; pairs > 0 && n > 0 {
			k(&w[0], ws, &x[0], xs, n, pairs, &out[0], ldo, acc)
		}
		if r := rows - 1; rows&1 != 0 {
			// Every token's output is read before any is written: with
			// ldo = 0 the four are one place (matVecFloatLong's four
			// copies of a token).
			var s [4]float32
			for t := range s {
				mv(&w[2*r*ws], &x[t*xs], n, 1, &s[t])
			}
			for t := range s {
				if acc {
					s[t] += out[t*ldo+r]
				}
			}
			for t := range s {
				out[t*ldo+r] = s[t]
			}
		}
	}
}
