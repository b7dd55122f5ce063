//go:build !purego

package kernels

// The 4-token float kernels of floatx4_arm64.s, for an even number of rows
// and n a positive multiple of 8; neonFloatX4 completes them to the floatX4
// contract.

//go:noescape
func bf16NEONx4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)

//go:noescape
func f16NEONx4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)

// neonFloatX4 wraps a NEON 4-token kernel (k) and the matching one-token
// kernel (mv) as a floatX4: the kernel runs the row pairs over the first
// n&^7 elements, the n%8 tail of those rows is added here, and an odd last
// row goes through mv once per token. dec converts one 2-byte weight.
func neonFloatX4(k func(*byte, int, *float32, int, int, int, *float32, int, bool), mv func(*byte, *float32, int, int, *float32), dec func(uint16) float32) floatX4 {
	return func(w []byte, ws int, x []float32, xs, n, rows int, out []float32, ldo int, acc bool) {
		pairs, n8 := rows&^1, n&^7
		if pairs > 0 && n8 > 0 {
			k(&w[0], ws, &x[0], xs, n8, pairs, &out[0], ldo, acc)
		}
		// Every token's output is read before any is written: with ldo = 0
		// the four are one place (matVecFloatLong's four copies of a token).
		var s [4]float32
		put := func(r int, add bool) {
			if add {
				for t := range s {
					s[t] += out[t*ldo+r]
				}
			}
			for t := range s {
				out[t*ldo+r] = s[t]
			}
		}
		if pairs > 0 && n8 < n {
			for r := 0; r < pairs; r++ {
				row := w[2*r*ws:]
				for t := range s {
					xt := x[t*xs:]
					s[t] = 0
					for i := n8; i < n; i++ {
						s[t] += dec(uint16(row[2*i])|uint16(row[2*i+1])<<8) * xt[i]
					}
				}
				put(r, n8 > 0 || acc)
			}
		}
		if r := rows - 1; rows&1 != 0 {
			for t := range s {
				mv(&w[2*r*ws], &x[t*xs], n, 1, &s[t])
			}
			put(r, acc)
		}
	}
}
