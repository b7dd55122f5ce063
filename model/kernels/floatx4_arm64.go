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
		if pairs > 0 && n8 < n {
			for r := 0; r < pairs; r++ {
				row := w[2*r*ws:]
				for t := 0; t < 4; t++ {
					xt := x[t*xs:]
					var s float32
					for i := n8; i < n; i++ {
						s += dec(uint16(row[2*i])|uint16(row[2*i+1])<<8) * xt[i]
					}
					if n8 > 0 || acc {
						out[t*ldo+r] += s
					} else {
						out[t*ldo+r] = s
					}
				}
			}
		}
		if r := rows - 1; rows&1 != 0 {
			for t := 0; t < 4; t++ {
				var s float32
				mv(&w[2*r*ws], &x[t*xs], n, 1, &s)
				if acc {
					s += out[t*ldo+r]
				}
				out[t*ldo+r] = s
			}
		}
	}
}
