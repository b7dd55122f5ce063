package kernels

import (
	"fmt"
	"sync"

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
	gemmQ8K   func(w []byte, rows int, x *Q8KBatch, out []float32, ldo int)
	gemmQ80   func(w []byte, rows int, x *Q80Batch, out []float32, ldo int)
	gemmFloat func(w []byte, rows int, x []float32, b int, out []float32, ldo int)
	gemmBF16  func(w []byte, rows int, x *BF16Batch, out []float32, ldo int)
)

// gemmBF16Of adapts a BF16 matrix-matrix kernel that reads the rows alone
// (not what a level lays out of them) to the table's form.
func gemmBF16Of(f gemmFloat) gemmBF16 {
	return func(w []byte, rows int, x *BF16Batch, out []float32, ldo int) {
		f(w, rows, x.x, x.b, out, ldo)
	}
}

// Q8KBatch is b rows of Q8_K activation blocks for the K-quant matrix
// products. The products that read one batch (the row chunks of one
// product, the products of one input) share it, so what a level's matrix
// kernels lay out of the blocks (at the amx level: the quants in tile
// order, the scales, the sums of 32) is built once for all of them, not
// once per call.
type Q8KBatch struct {
	a []quant.BlockQ8K
	b int
	laid
}

// NewQ8KBatch returns the batch of the b rows of blocks a.
func NewQ8KBatch(a []quant.BlockQ8K, b int) *Q8KBatch {
	return &Q8KBatch{a: a, b: b}
}

// Reset makes x the batch of the b rows of blocks a, whose contents may
// have changed since the last Reset; memory laid out before is reused. No
// product may be using x.
func (x *Q8KBatch) Reset(a []quant.BlockQ8K, b int) {
	x.a, x.b = a, b
	x.laid.reset()
}

// layout returns what build lays out of the batch, a layout of kind k.
func (x *Q8KBatch) layout(k layoutKind, build func(dst []byte, a []quant.BlockQ8K, b int) []byte) []byte {
	return x.get(k, func(dst []byte) []byte { return build(dst, x.a, x.b) })
}

// grow returns s resized to n, reallocated when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// subSums writes the sums of the 8 32-quant sub-blocks of every block of a
// into bs (bs[8*i+j] for block i), growing it as needed.
func subSums(bs []int16, a []quant.BlockQ8K) []int16 {
	bs = grow(bs, 8*len(a))
	for i := range a {
		s := &a[i].Bsums
		for j := 0; j < 8; j++ {
			bs[8*i+j] = s[2*j] + s[2*j+1]
		}
	}
	return bs
}

// Q80Batch is b rows of Q8_0 activation blocks for the Q8_0 and Q4_0
// matrix products, shared as a Q8KBatch is: at the amx level, the quants
// in token tiles and their scales laid out once for every product and row
// chunk that reads them.
type Q80Batch struct {
	a []quant.BlockQ8_0
	b int
	laid
}

// NewQ80Batch returns the batch of the b rows of blocks a.
func NewQ80Batch(a []quant.BlockQ8_0, b int) *Q80Batch {
	return &Q80Batch{a: a, b: b}
}

// Reset is Q8KBatch.Reset for rows of Q8_0 blocks.
func (x *Q80Batch) Reset(a []quant.BlockQ8_0, b int) {
	x.a, x.b = a, b
	x.laid.reset()
}

// BF16Batch is b rows of activations for BF16 weights (float32 holding
// bf16 values, quant.RoundBF16), shared as a Q8KBatch is: at the amx
// level, the rows narrowed to bf16 and padded for the tiles once for every
// product and row chunk that reads them.
type BF16Batch struct {
	x []float32
	b int
	laid
}

// NewBF16Batch returns the batch of the b rows of x.
func NewBF16Batch(x []float32, b int) *BF16Batch {
	return &BF16Batch{x: x, b: b}
}

// Reset is Q8KBatch.Reset for rows of bf16 values.
func (x *BF16Batch) Reset(v []float32, b int) {
	x.x, x.b = v, b
	x.laid.reset()
}

// laid holds what a level's matrix kernels lay out of a batch: built by
// the first product that asks after a reset while the others wait, its
// memory kept across resets.
type laid struct {
	once sync.Once
	kind layoutKind
	lay  []byte
}

// layoutKind names the layouts kernels build of a batch; one batch holds
// one (the products of a level share it).
type layoutKind uint8

const (
	layoutNone      layoutKind = iota
	layoutAMXQK                // amx: Q8_K quants in tile order, scales, sums of 32
	layoutAMXBF                // amx: rows narrowed to bf16
	layoutAMXQ80               // amx: Q8_0 quants in token tiles, scales
	layoutTiles                // avx512, avxvnni: sums of 32, Q8_K blocks in token tiles (Q8KBatch.tiles)
	layoutQuads                // arm64 i8mm: Q8_K blocks packed in token quads
	layoutQuadsBF16            // arm64 i8mm with FEAT_BF16: rows packed in token quads
)

func (l *laid) reset() { l.once = sync.Once{} }

// get returns the layout of kind k, which build lays out (into the memory
// it is given) the first time. Asking one batch for two kinds between
// resets (a level change while products share it) is a program error.
func (l *laid) get(k layoutKind, build func(dst []byte) []byte) []byte {
	l.once.Do(func() { l.lay, l.kind = build(l.lay), k })
	if l.kind != k {
		panic(fmt.Sprintf("kernels: a batch laid out as kind %d was asked for kind %d", l.kind, k))
	}
	return l.lay
}

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
// at 64 tokens, ~280 at 256 on one Sapphire-Rapids-class core), 512 at the
// amx level (Q4_K_M pp2048 1.15-1.24x of 256's in three interleaved pairs,
// docs/PERFORMANCE.md), else 64.
func PrefillBatch() int {
	switch {
	case curPrefill > 0:
		return curPrefill
	case cur.q4kx8mm != nil || cur.q4kmm != nil || cur.q80mm != nil:
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
