package kernels

import "fmt"

// floatX4 multiplies a panel of a float weight matrix by 4 activation
// vectors: rows rows of n elements starting at w with a row stride of ws
// elements, times x[t*xs : t*xs+n] for t < 4; out[t*ldo+r] is set to the dot
// product of row r and token t, or has it added when acc is set (the panel
// is one block of K). It is the 4-token kernel of MatMulF16 / MatMulBF16.
type floatX4 func(w []byte, ws int, x []float32, xs, n, rows int, out []float32, ldo int, acc bool)

// Blocking of the 4-token float kernels: a panel of whole rows is sized to
// stay in L2 while the token groups of the batch reuse it, so each weight is
// read from memory once per batch, and the 4 activation vectors of a group
// (16 bytes per element) stream from L2 past it. Measured on Zen 3 with 64
// tokens, cutting K so those activations stay in L1 (1024 elements, 16 KiB)
// was slower (41 against 50 GB/s at 2048x2048) than whole rows, because of
// the extra reductions and read-modify-writes of out per block; K is only
// cut once the group's activations would crowd the panel out of L2.
const (
	floatChunk      = 16384     // elements of K per block: 256 KiB of activations
	floatPanelBytes = 256 << 10 // weight bytes of one panel
)

// matMulFloat is matMul for float weights of es bytes per element, running
// mv4 on whole groups of 4 tokens over K-blocked panels and the one-token
// kernel mv on the rest.
func matMulFloat(kind string, w []byte, rows int, x []float32, b int, out []float32, ldo, es int, mv func([]byte, int, []float32, []float32), mv4 floatX4) {
	if mv4 == nil || b < 4 || rows == 0 || len(x) == 0 {
		matMul(kind, w, rows, x, b, out, ldo, es, mv, nil)
		return
	}
	if len(x)%b != 0 || ldo < rows || len(out) < (b-1)*ldo+rows {
		panic(fmt.Sprintf("kernels: %s: %d activation elements for %d tokens, %d rows, ldo %d, %d outputs", kind, len(x), b, rows, ldo, len(out)))
	}
	n := len(x) / b
	checkQ(kind, len(w), rows, n*es, rows)
	// Equal chunks, multiples of 8 elements so only the last has a tail.
	chunks := (n + floatChunk - 1) / floatChunk
	kc := ((n+chunks-1)/chunks + 7) &^ 7
	panel := max(2, floatPanelBytes/(kc*es)) &^ 1
	b4 := b &^ 3
	for k0 := 0; k0 < n; k0 += kc {
		k1 := min(n, k0+kc)
		for r0 := 0; r0 < rows; r0 += panel {
			r1 := min(rows, r0+panel)
			for t := 0; t < b4; t += 4 {
				mv4(w[(r0*n+k0)*es:], n, x[t*n+k0:], n, k1-k0, r1-r0, out[t*ldo+r0:], ldo, k0 > 0)
			}
		}
	}
	if b4 < b {
		matMul(kind, w, rows, x[b4*n:], b-b4, out[b4*ldo:], ldo, es, mv, nil)
	}
}

// matVecFloatLong is the one-token product of float rows longer than
// floatChunk at a level with 4-token kernels. Those rows are blocked over K
// in matMulFloat, which sums a token's output in another order than the
// one-token kernels do, so a single token runs the 4-token kernel too, on
// four copies of itself (a stride of 0 between the copies and between
// their outputs): every token of every batch then sums the same way. No
// model droidgo runs has rows that long (the 1.7B's longest is 6656).
func matVecFloatLong(w []byte, rows int, x []float32, out []float32, es int, mv4 floatX4) {
	n := len(x)
	chunks := (n + floatChunk - 1) / floatChunk
	kc := ((n+chunks-1)/chunks + 7) &^ 7
	panel := max(2, floatPanelBytes/(kc*es)) &^ 1
	for k0 := 0; k0 < n; k0 += kc {
		k1 := min(n, k0+kc)
		for r0 := 0; r0 < rows; r0 += panel {
			r1 := min(rows, r0+panel)
			mv4(w[(r0*n+k0)*es:], n, x[k0:], 0, k1-k0, r1-r0, out[r0:], 0, k0 > 0)
		}
	}
}
