//go:build !purego

package kernels

// bf16Table adds the FEAT_BF16 kernels to a table of the i8mm level (every
// core with FEAT_BF16 so far has i8mm too): BFMMLA for batches (bf16MM),
// BFDOT for one token (bf16MV) and for 4 (bf16MVx4). Without FEAT_BF16
// (which x/sys/cpu does not report; hasBF16 reads HWCAP2) the table is
// returned as it is.
func bf16Table(t table) table {
	if hasBF16() {
		t.bf16mm = bf16MM
		t.bf16 = bf16MV
		t.bf164 = bf16MVx4
	}
	return t
}

// bf16MV is the one-token BF16 product with BFDOT: x is rounded to bf16 once
// per call (exact for the quant.RoundBF16-rounded activations MatVecBF16
// asks for, and quant.RoundBF16's result for any other value), then every
// row is multiplied by that copy, 8 bf16 pairs per instruction where the
// NEON kernel widens each weight to float32 first.
//
// Numerics against quant.DotBF16 on the same bf16 x: the products are the
// same exact float32 values (bf16 times bf16 needs 16 of float32's 24
// significand bits), only their sum differs. BFDOT rounds each pair sum and
// each accumulation to odd (relative error below 2^-23, twice round to
// nearest's) and flushes subnormal inputs and results to zero. bf16DOT's
// lanes take at most n/64+7 BFDOT steps, then a tree of 6 round-to-nearest
// additions sums them and the scalar tail, so every product passes through
// at most n/64+8 roundings to odd and 6 to nearest:
//
//	|bf16MV - exact| <= (n/64 + 11) * 2^-23 * sum|w*x|
//
// to first order, plus the terms with a subnormal factor (taken as zero)
// and up to 2^-126 per flushed result. quant.DotBF16's own bound, with 4
// chains of n/4 and 5 more additions, is (n/4 + 5) * 2^-24 * sum|w*x|:
// larger for n >= 80, so the kernel is held to the tolerance every float
// kernel meets against the reference, and TestMatVecBF16Bound holds it to
// its own bound against the exact sum.
func bf16MV(w []byte, rows int, x []float32, out []float32) {
	buf := getBuf(2 * len(x))
	defer mmPool.Put(buf)
	xb := *buf
	bf16Round(&x[0], &xb[0], len(x))
	bf16DOT(&w[0], &xb[0], len(x), rows, &out[0])
}

// bf16MVx4 is the 4-token BF16 product with BFDOT (a floatX4, for batches
// of 4 to 15 tokens below bf16MM's, and rows longer than floatChunk): the
// 4 tokens' x rounded to bf16 once per call, each row times all 4. Its
// lanes take at most n/16+1 BFDOT steps after the pair's own rounding,
// then up to 5 round-to-nearest additions (the tree, the scalar tail's
// sum, the old output with acc), so bf16MV's bound holds per call with
// (n/16 + 5) * 2^-23 in place of (n/64 + 11) * 2^-23: still below
// quant.DotBF16's own for n > 40 (TestMatVecBF16Bound checks both).
func bf16MVx4(w []byte, ws int, x []float32, xs, n, rows int, out []float32, ldo int, acc bool) {
	if rows == 0 || n == 0 {
		return
	}
	buf := getBuf(8 * n)
	defer mmPool.Put(buf)
	xb := *buf
	for t := 0; t < 4; t++ {
		bf16Round(&x[t*xs], &xb[2*t*n], n)
	}
	bf16DOTx4(&w[0], ws, &xb[0], n, rows, &out[0], ldo, acc)
}

// bf16Round writes x[:n] rounded to bf16 into y (2n bytes, little-endian).
//
//go:noescape
func bf16Round(x *float32, y *byte, n int)

// bf16DOT sets out[r] to the product of row r of w (rows rows of n bf16)
// with x (n bf16).
//
//go:noescape
func bf16DOT(w, x *byte, n, rows int, out *float32)

// bf16DOTx4 sets (or with acc adds to) out[t*ldo+r] the product of row r of
// w (rows rows of n bf16, ws elements apart) with token t of x (4 x n bf16).
//
//go:noescape
func bf16DOTx4(w *byte, ws int, x *byte, n, rows int, out *float32, ldo int, acc bool)
