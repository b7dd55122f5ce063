package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/droidgo/droidgo/model/quant"
)

// The products of prefill attention on matrix tiles (the amx level): the
// scores of 32 query vectors against a range of keys, S = Q.K^T, and their
// outputs O = P.V. Every operand is a matrix of IEEE halves (the f16 KV
// cache; queries and weights rounded to f16 as for the vector kernels), and
// each half is held as two bf16s, hi (rounded to nearest even) and lo (the
// rest: exact, a half has 11 significant bits and a bf16 8), so a product
// of halves is ah.bh + ah.bl + al.bh + al.bl exactly, four tile products
// summed in f32: the f16 products summed in f32 as the vector kernels do
// them (in another order), where bf16 alone would lose 3 bits of every
// key.
//
// The right operand (the keys, or the values as rows of positions) is
// converted once per pass and shared by every task that reads it: a
// HalfStage collects its rows, HalfTiles.Pack lays them out as B tiles.

// TileAttention reports whether this level multiplies attention's
// operands on matrix tiles: HalfTiles.Pack and MulHalves run only where it
// does.
func TileAttention() bool { return cur.halfMul != nil }

// HalfStage holds the rows of a matrix of halves as bf16 hi and lo parts,
// rows padded with zeros to a multiple of 32 halves and to a multiple of
// 32 rows, on their way to a HalfTiles.
type HalfStage struct {
	buf      []byte
	n32, k32 int
}

// Reset makes s an n x k matrix of zeros.
func (s *HalfStage) Reset(n, k int) {
	if n < 0 || k < 0 {
		panic(fmt.Sprintf("kernels: HalfStage.Reset(%d, %d)", n, k))
	}
	s.n32, s.k32 = (n+31)&^31, (k+31)&^31
	need := 4 * s.n32 * s.k32
	s.buf = grow(s.buf, need)
	clear(s.buf[:need])
}

// halves returns the hi and lo planes, row-major.
func (s *HalfStage) halves() (hi, lo []uint16) {
	m := s.n32 * s.k32
	if m == 0 {
		return nil, nil
	}
	h := unsafe.Slice((*uint16)(unsafe.Pointer(&s.buf[0])), 2*m)
	return h[:m], h[m:]
}

// Set writes the len(src)/2 little-endian halves of src to row i from
// element k0 on; where they run past the row's last padded element they
// go on in the next row, which only whole rows of a k that is a multiple
// of 32 should do.
func (s *HalfStage) Set(i, k0 int, src []byte) {
	m := len(src) / 2
	o := i*s.k32 + k0
	if i < 0 || k0 < 0 || k0 >= s.k32 && m > 0 || o+m > s.n32*s.k32 {
		panic(fmt.Sprintf("kernels: HalfStage.Set: %d halves at row %d, element %d of a %dx%d stage", m, i, k0, s.n32, s.k32))
	}
	if m == 0 {
		return
	}
	hi, lo := s.halves()
	n := 0
	if cur.halfSplit != nil {
		n = m &^ 15
		if n > 0 {
			cur.halfSplit(hi[o:o+n], lo[o:o+n], src[:2*n])
		}
	}
	for j := n; j < m; j++ {
		hi[o+j], lo[o+j] = splitHalf(uint16(src[2*j]) | uint16(src[2*j+1])<<8)
	}
}

// splitHalf returns the bf16 hi and lo parts of the half h: hi is h
// rounded to nearest even, lo the top half of h - hi (exact).
func splitHalf(h uint16) (hi, lo uint16) {
	return splitBF16(quant.FP16ToFP32(h))
}

// splitBF16 is the split of a float32 x that the assembly does: hi rounded
// to nearest even in integer arithmetic, lo the top half of x - hi
// (exact when x is a half).
func splitBF16(x float32) (hi, lo uint16) {
	b := math.Float32bits(x)
	h := (b + 0x7fff + (b>>16)&1) >> 16
	return uint16(h), uint16(math.Float32bits(x-math.Float32frombits(h<<16)) >> 16)
}

// HalfTiles is a matrix of n rows of k halves laid out as the right
// operand of MulHalves (row j of it is column j of B): for each 16 rows and
// each 32 halves of k a 1 KiB tile of 16 pairs x 16 rows, hi tiles then lo
// tiles, 64-byte aligned.
type HalfTiles struct {
	buf      []byte // the memory in use: own or the caller's
	own      []byte
	off      int
	n32, k32 int
}

// HalfTilesBytes is the memory a HalfTiles of n rows of k halves takes.
func HalfTilesBytes(n, k int) int { return 4*((n+31)&^31)*((k+31)&^31) + 64 }

// Reset makes t an n x k matrix (both padded to multiples of 32), whose
// rows Pack fills, in mem when it holds HalfTilesBytes(n, k) bytes (t
// then uses the caller's memory until the next Reset), else in memory of
// its own, reused.
func (t *HalfTiles) Reset(n, k int, mem []byte) {
	if n < 0 || k < 0 {
		panic(fmt.Sprintf("kernels: HalfTiles.Reset(%d, %d)", n, k))
	}
	t.n32, t.k32 = (n+31)&^31, (k+31)&^31
	need := HalfTilesBytes(n, k)
	if len(mem) >= need {
		t.buf = mem[:need]
	} else {
		t.buf = grow(t.own, need)
		t.own = t.buf
	}
	t.off = int((64 - uintptr(unsafe.Pointer(&t.buf[0]))&63) & 63)
}

// Pack lays out the rows of s as rows r0.. of t (r0 a multiple of 32, s as
// wide as t). Packs of different rows may run at once.
func (t *HalfTiles) Pack(s *HalfStage, r0 int) {
	if cur.halfPack == nil {
		panic("kernels: HalfTiles.Pack: this level has no tile attention")
	}
	if s.k32 != t.k32 || r0 < 0 || r0&31 != 0 || r0+s.n32 > t.n32 {
		panic(fmt.Sprintf("kernels: HalfTiles.Pack: %dx%d stage at row %d of %dx%d tiles", s.n32, s.k32, r0, t.n32, t.k32))
	}
	if s.n32*s.k32 > 0 {
		cur.halfPack(t, s, r0)
	}
}

// MulHalves sets out[i*ldo+j-j0] = sum over k in [k0, k1) of
// a[i*lda+k-k0] * B[k][j] (B[k][j] being element k of row j of b) for i <
// 32 and j in [j0, j1): rows i >= m of a are taken as zeros and a's values
// must be halves (held as float32). With acc set the sums are added to
// what out holds. j0, j1, k0 and k1 are multiples of 32 inside b's padded
// rows; out must hold 32 rows. Only where TileAttention.
func MulHalves(a []float32, lda, m int, b *HalfTiles, j0, j1, k0, k1 int, out []float32, ldo int, acc bool) {
	if cur.halfMul == nil {
		panic("kernels: MulHalves: this level has no tile attention")
	}
	if j0 == j1 {
		return
	}
	if (j0|j1|k0|k1)&31 != 0 || j0 < 0 || j1 < j0 || j1 > b.n32 || k0 < 0 || k1 <= k0 || k1 > b.k32 ||
		m < 0 || m > 32 || lda < k1-k0 || m > 0 && len(a) < (m-1)*lda+k1-k0 || ldo < j1-j0 || len(out) < 31*ldo+j1-j0 {
		panic(fmt.Sprintf("kernels: MulHalves: %d rows of a (%d floats, lda %d), columns %d-%d and k %d-%d of a %dx%d b, %d outputs at ldo %d",
			m, len(a), lda, j0, j1, k0, k1, b.n32, b.k32, len(out), ldo))
	}
	cur.halfMul(a, lda, m, b, j0, j1, k0, k1, out, ldo, acc)
}
