package kernels

import (
	"fmt"

	"github.com/droidgo/droidgo/model/quant"
)

// tileBytes is the weight bytes one tile of rows may take: small enough to stay
// in L1 (32-48 KiB on the targets) while every token of the batch streams past
// it, so a prefill batch reads each weight from memory once.
const tileBytes = 24 << 10

// matMul runs mv over tiles of rows for each of the b activation vectors in a.
func matMul[A any](kind string, w []byte, rows int, a []A, b int, out []float32, ldo, rowBytesPerElem int, mv func([]byte, int, []A, []float32), mv4 func([]byte, int, []A, []float32, int)) {
	if b <= 0 || len(a)%b != 0 || ldo < rows || (rows > 0 && len(out) < (b-1)*ldo+rows) {
		panic(fmt.Sprintf("kernels: %s: %d activation elements for %d tokens, %d rows, ldo %d, %d outputs", kind, len(a), b, rows, ldo, len(out)))
	}
	n := len(a) / b
	rowBytes := n * rowBytesPerElem
	checkQ(kind, len(w), rows, rowBytes, rows)
	tile := rows
	if rowBytes > 0 {
		tile = max(1, tileBytes/rowBytes)
	}
	for r0 := 0; r0 < rows; r0 += tile {
		r1 := min(rows, r0+tile)
		wt := w[r0*rowBytes : r1*rowBytes]
		t := 0
		if mv4 != nil && n > 0 {
			for ; t+4 <= b; t += 4 {
				mv4(wt, r1-r0, a[t*n:(t+4)*n], out[t*ldo+r0:], ldo)
			}
		}
		for ; t < b; t++ {
			mv(wt, r1-r0, a[t*n:(t+1)*n], out[t*ldo+r0:t*ldo+r1])
		}
	}
}

// MatMulQ4K computes, for a batch of b tokens, out[t*ldo+r] = quant.DotQ4K(row
// r of w, a[t*nb:(t+1)*nb]) for t < b and r < rows, where nb = len(a)/b. It is
// MatVecQ4K per token, tiled over rows so each weight is read from memory
// once per batch (prefill), and on amd64 tokens go 4 at a time through a
// kernel that unpacks each weight block once for all 4. ldo >= rows is the
// output row stride.
func MatMulQ4K(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	if useGemm(cur.q4kmm != nil, "MatMulQ4K", len(w), rows, quant.BlockQ4_KSize, len(x.a), x.b, len(out), ldo) {
		cur.q4kmm(w, rows, x, out, ldo)
		return
	}
	matMul("MatMulQ4K", w, rows, x.a, x.b, out, ldo, quant.BlockQ4_KSize, MatVecQ4K, cur.q4k4)
}

// MatMulQ5K is MatMulQ4K for Q5_K weights.
func MatMulQ5K(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	if useGemm(cur.q5kmm != nil, "MatMulQ5K", len(w), rows, quant.BlockQ5_KSize, len(x.a), x.b, len(out), ldo) {
		cur.q5kmm(w, rows, x, out, ldo)
		return
	}
	matMul("MatMulQ5K", w, rows, x.a, x.b, out, ldo, quant.BlockQ5_KSize, MatVecQ5K, nil)
}

// MatMulQ6K is MatMulQ4K for Q6_K weights.
func MatMulQ6K(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	if useGemm(cur.q6kmm != nil, "MatMulQ6K", len(w), rows, quant.BlockQ6_KSize, len(x.a), x.b, len(out), ldo) {
		cur.q6kmm(w, rows, x, out, ldo)
		return
	}
	matMul("MatMulQ6K", w, rows, x.a, x.b, out, ldo, quant.BlockQ6_KSize, MatVecQ6K, cur.q6k4)
}

// MatMulQ8_0 is MatMulQ4K for Q8_0 weights and Q8_0 activations.
func MatMulQ8_0(w []byte, rows int, x *Q80Batch, out []float32, ldo int) {
	if useGemm(cur.q80mm != nil, "MatMulQ8_0", len(w), rows, quant.BlockQ8_0Size, len(x.a), x.b, len(out), ldo) {
		cur.q80mm(w, rows, x, out, ldo)
		return
	}
	matMul("MatMulQ8_0", w, rows, x.a, x.b, out, ldo, quant.BlockQ8_0Size, MatVecQ8_0, cur.q804)
}

// MatMulQ4_0 is MatMulQ4K for Q4_0 weights and Q8_0 activations.
func MatMulQ4_0(w []byte, rows int, x *Q80Batch, out []float32, ldo int) {
	if useGemm(cur.q40mm != nil, "MatMulQ4_0", len(w), rows, quant.BlockQ4_0Size, len(x.a), x.b, len(out), ldo) {
		cur.q40mm(w, rows, x, out, ldo)
		return
	}
	matMul("MatMulQ4_0", w, rows, x.a, x.b, out, ldo, quant.BlockQ4_0Size, MatVecQ4_0, nil)
}

// MatMulF32 is MatMulQ4K for F32 weights: x holds b vectors of len(x)/b floats.
func MatMulF32(w []byte, rows int, x []float32, b int, out []float32, ldo int) {
	matMul("MatMulF32", w, rows, x, b, out, ldo, 4, MatVecF32, nil)
}

// MatMulF16 is MatMulF32 for F16 weights (x rounded with quant.RoundF16 to
// match ggml). On amd64 and arm64 whole groups of 4 tokens go through kernels
// that convert each weight once for all 4, over row panels sized for L2
// (floatx4.go).
func MatMulF16(w []byte, rows int, x []float32, b int, out []float32, ldo int) {
	matMulFloat("MatMulF16", w, rows, x, b, out, ldo, 2, MatVecF16, cur.f164)
}

// MatMulBF16 is MatMulF16 for BF16 weights; x must hold bf16 values
// (quant.RoundBF16), as for MatVecBF16: the matrix-matrix kernels (BFMMLA,
// AMX) take each value's upper 16 bits, arm64's BFDOT ones round it.
func MatMulBF16(w []byte, rows int, x *BF16Batch, out []float32, ldo int) {
	if useGemm(cur.bf16mm != nil, "MatMulBF16", len(w), rows, 2, len(x.x), x.b, len(out), ldo) {
		cur.bf16mm(w, rows, x, out, ldo)
		return
	}
	matMulFloat("MatMulBF16", w, rows, x.x, x.b, out, ldo, 2, MatVecBF16, cur.bf164)
}
