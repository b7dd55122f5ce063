package kernels

import (
	"fmt"

	"github.com/droidgo/droidgo/model/quant"
)

// Matrix-matrix kernels. A gemm* entry of a level's table computes a whole
// batched product out[t*ldo+r] = dot(row r of w, token t of a) for r < rows
// and t < b, with the same semantics as the matrix-vector kernels (integer
// parts exact, float accumulation order free). It is used instead of tiling
// the one- and 4-token kernels once a batch has gemmMinTokens tokens: the
// kernels behind it work on tiles of many tokens times a group of rows,
// unpack each weight block once per tile and reuse it for every token, and
// handle leftover rows and tokens themselves.
type (
	gemmQ8K   func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int)
	gemmQ80   func(w []byte, rows int, a []quant.BlockQ8_0, b int, out []float32, ldo int)
	gemmFloat func(w []byte, rows int, x []float32, b int, out []float32, ldo int)
)

// gemmMinTokens is the batch from which the matrix-matrix kernels run: below
// it the unpacking of a weight tile is not repaid by the tokens that reuse it.
const gemmMinTokens = 16

// checkMM panics unless a batch of b tokens of n elements each (len(a)
// elements in all), rows rows of rowBytes bytes and an output of stride ldo
// fit together; it returns n.
func checkMM(kind string, wlen, rows, elemBytes, alen, b, olen, ldo int) int {
	if b <= 0 || alen%b != 0 || ldo < rows || (rows > 0 && olen < (b-1)*ldo+rows) {
		panic(fmt.Sprintf("kernels: %s: %d activation elements for %d tokens, %d rows, ldo %d, %d outputs", kind, alen, b, rows, ldo, olen))
	}
	n := alen / b
	checkQ(kind, wlen, rows, n*elemBytes, rows)
	return n
}

// useGemm reports whether a batch of b tokens goes to the matrix-matrix
// kernel mm (and checks the shapes when it does).
func useGemm(mm bool, kind string, wlen, rows, elemBytes, alen, b, olen, ldo int) bool {
	if !mm || b < gemmMinTokens || rows == 0 {
		return false
	}
	return checkMM(kind, wlen, rows, elemBytes, alen, b, olen, ldo) > 0
}

// PrefillBatch is the prefill chunk (tokens per pass through the layers)
// the current level wants: 256 where matrix-matrix kernels exist, whose
// per-tile weight unpacking is repaid by more tokens (AMX Q4_K: ~230 GMAC/s
// at 64 tokens, ~280 at 256 on one Sapphire-Rapids-class core), else 64.
func PrefillBatch() int {
	if cur.q4kx8mm != nil || cur.q4kmm != nil || cur.q80mm != nil {
		return 256
	}
	return 64
}

// PlainBatchSlower reports whether batched products of plain Q4_K matrices
// are slower than of interleaved ones at the current level: the
// interleaved layout has batched kernels the plain one lacks (AVX2: about
// half the speed), or, on arm64, the same matrix-matrix kernels behind an
// assembly packer where the plain layout is packed by Go code (see
// docs/PERFORMANCE.md), so a long prompt is worth repacking for first.
func PlainBatchSlower() bool {
	if plainPackedInGo {
		return cur.q4kx8mm != nil
	}
	return (cur.q4kx84 != nil || cur.q4kx8mm != nil) && cur.q4kmm == nil
}
