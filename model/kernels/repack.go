package kernels

import (
	"fmt"

	"github.com/droidgo/droidgo/model/quant"
)

// Interleaved ("x8") layouts: groups of 8 rows of a K-quant matrix stored
// block by block with the 8 rows' fields side by side, so that a matrix-vector
// kernel works on 8 rows per instruction with one output lane per row. Each
// row keeps its bytes, only their order changes: the matrix has exactly the
// same size, and rows [r0, r1) with r0, r1 multiples of 8 still occupy bytes
// [r0*rowBytes, r1*rowBytes).
//
// What it buys (AVX2): every 32-byte weight load holds 4 consecutive weights
// of each of 8 rows, multiplied with one 4-byte activation broadcast; the
// 16-bit products of one sub-block are summed over the whole sub-block before
// the single multiply by the 8 rows' scales, where the row-by-row kernels need
// a scale multiply per 32 weights and a horizontal sum per row. The scales
// stay in their packed 6-bit (Q4_K) or int8 (Q6_K) form, one byte plane per
// field, and are unpacked for 8 rows at once.
//
// Q4_K group block (8 x 144 = 1152 bytes), for super-block b of rows 8g..8g+7:
//
//	[0, 16)      d of row 0..7 (f16)
//	[16, 32)     dmin of row 0..7 (f16)
//	[32, 128)    packed scale byte k of row r at 32 + 8k + r (k < 12)
//	[128, 1152)  for chunk p < 4, step i < 8: 32 bytes at 128 + 256p + 32i,
//	             row r's qs[32p+4i : 32p+4i+4] at +4r (low nibbles: weights
//	             64p+4i.., sub-block 2p; high: 64p+32+4i.., sub-block 2p+1)
//
// Q6_K group block (8 x 210 = 1680 bytes):
//
//	[0, 16)      d of row 0..7 (f16)
//	[16, 144)    scale k of row r at 16 + 8k + r (k < 16)
//	[144, 1680)  for half n < 2, step i < 8: 96 bytes at 144 + 768n + 96i:
//	             row r's ql[64n+4i:+4] at +4r, ql[64n+32+4i:+4] at 32+4r,
//	             qh[32n+4i:+4] at 64+4r
//
// Q8_0 group block (8 x 34 = 272 bytes), for block b (32 weights) of rows
// 8g..8g+7 (arm64: one SDOT by element per 16 bytes, as for the K-quants):
//
//	[0, 16)      d of row 0..7 (f16)
//	[16, 272)    for step i < 8: 32 bytes at 16 + 32i, row r's
//	             qs[4i:4i+4] at +4r
const Interleave = 8

// RepackFormat versions the bytes Repack writes. Interleaved weights are
// kept across runs in the weights cache, keyed with it, so any change of
// the layout must change it (TestRepackFormat pins the bytes).
const RepackFormat = 1

// Repackable reports whether t has an interleaved layout.
func Repackable(t quant.Type) bool { return t == quant.Q4_K || t == quant.Q6_K || t == quant.Q8_0 }

// RepackPays reports whether the current instruction-set level has an
// interleaved kernel for t, i.e. whether repacking a matrix of type t makes
// its products faster; without one the interleaved matrix still works, at
// the speed of the generic kernels.
func RepackPays(t quant.Type) bool {
	switch t {
	case quant.Q4_K:
		return cur.q4kx8 != nil
	case quant.Q6_K:
		return cur.q6kx8 != nil
	case quant.Q8_0:
		return cur.q80x8 != nil
	}
	return false
}

// Repack writes the rows x cols matrix src (t's plain GGUF layout) into dst
// in t's interleaved layout; dst and src have the same length and must not
// overlap. rows must be a multiple of Interleave.
func Repack(t quant.Type, dst, src []byte, rows, cols int) error {
	if !Repackable(t) {
		return fmt.Errorf("repack: no interleaved layout for %v", t)
	}
	if rows%Interleave != 0 || cols%quant.QK_K != 0 || rows < 0 {
		return fmt.Errorf("repack %v: %d x %d is not a whole number of %d-row groups of %d-weight blocks", t, rows, cols, Interleave, quant.QK_K)
	}
	rb := t.RowSize(cols)
	if len(src) != rows*rb || len(dst) != len(src) {
		return fmt.Errorf("repack %v: %d x %d needs %d bytes, have %d in and %d out", t, rows, cols, rows*rb, len(src), len(dst))
	}
	if rows == 0 || rb == 0 {
		return nil
	}
	if !repackArch(t, dst, src, rows, rb) {
		repackGo(t, dst, src, rows, rb)
	}
	return nil
}

// repackGo is Repack's copy in Go, group block by group block: the
// reference for the assembly copies of repackArch (repack_arm64.s).
func repackGo(t quant.Type, dst, src []byte, rows, rb int) {
	bs := t.TypeSize()
	nb := rb / bs
	pack := packGroupQ6K
	switch t {
	case quant.Q4_K:
		pack = packGroupQ4K
	case quant.Q8_0:
		pack = packGroupQ80
	}
	for g := 0; g < rows; g += Interleave {
		for b := 0; b < nb; b++ {
			pack(dst[(g*nb+b*Interleave)*bs:(g*nb+(b+1)*Interleave)*bs], src[g*rb+b*bs:], rb)
		}
	}
}

// RepackedRow writes row r of the interleaved rows x cols matrix w back into
// dst (t.RowSize(cols) bytes) in the plain layout.
func RepackedRow(t quant.Type, dst, w []byte, r, cols int) {
	bs := t.TypeSize()
	nb := t.RowSize(cols) / bs
	unpack := unpackFunc(t)
	g, rr := r/Interleave*Interleave, r%Interleave
	for b := 0; b < nb; b++ {
		unpack(dst[b*bs:(b+1)*bs], w[(g*nb+b*Interleave)*bs:(g*nb+(b+1)*Interleave)*bs], rr)
	}
}

// unpackFunc returns the function that writes one row's block of a group
// block of t back in the plain layout.
func unpackFunc(t quant.Type) func(blk, gb []byte, r int) {
	switch t {
	case quant.Q4_K:
		return unpackQ4K
	case quant.Q8_0:
		return unpackQ80
	}
	return unpackQ6K
}

// packGroupQ80 is packGroupQ4K for Q8_0.
func packGroupQ80(gb, src []byte, rb int) {
	g := (*[8 * quant.BlockQ8_0Size]byte)(gb)
	var blk [8]*[quant.BlockQ8_0Size]byte
	for r := range blk {
		blk[r] = (*[quant.BlockQ8_0Size]byte)(src[r*rb:])
	}
	for r, b := range blk {
		g[2*r], g[2*r+1] = b[0], b[1]
	}
	for i := 0; i < 8; i++ {
		for r, b := range blk {
			*(*[4]byte)(g[16+32*i+4*r:]) = *(*[4]byte)(b[2+4*i:])
		}
	}
}

// unpackQ80 is unpackQ4K for Q8_0 (plain block: d, qs[32]).
func unpackQ80(blk, gb []byte, r int) {
	g := (*[8 * quant.BlockQ8_0Size]byte)(gb)
	b := (*[quant.BlockQ8_0Size]byte)(blk)
	r &= 7
	b[0], b[1] = g[2*r], g[2*r+1]
	for i := 0; i < 8; i++ {
		*(*[4]byte)(b[2+4*i:]) = *(*[4]byte)(g[16+32*i+4*r:])
	}
}

// unpackQ4K writes row r of the Q4_K group block gb into blk in the plain
// layout: the inverse of packGroupQ4K (the round-trip test holds them to
// each other, and the kernel tests hold the layout to the references).
func unpackQ4K(blk, gb []byte, r int) {
	g := (*[8 * quant.BlockQ4_KSize]byte)(gb)
	b := (*[quant.BlockQ4_KSize]byte)(blk)
	r &= 7
	b[0], b[1], b[2], b[3] = g[2*r], g[2*r+1], g[16+2*r], g[17+2*r]
	for k := 0; k < 12; k++ {
		b[4+k] = g[32+8*k+r]
	}
	for j := 0; j < 32; j++ { // j = 8p + i: qs[32p+4i:] = qs[4j:]
		*(*[4]byte)(b[16+4*j:]) = *(*[4]byte)(g[128+32*j+4*r:])
	}
}

// packGroupQ4K writes the Q4_K blocks of 8 rows (block r at src[r*rb:])
// into the group block gb, in gb's order (stores in sequence make the
// load-time repack about twice as fast as row by row).
func packGroupQ4K(gb, src []byte, rb int) {
	g := (*[8 * quant.BlockQ4_KSize]byte)(gb)
	var blk [8]*[quant.BlockQ4_KSize]byte
	for r := range blk {
		blk[r] = (*[quant.BlockQ4_KSize]byte)(src[r*rb:])
	}
	for r, b := range blk {
		g[2*r], g[2*r+1], g[16+2*r], g[17+2*r] = b[0], b[1], b[2], b[3]
	}
	for k := 0; k < 12; k++ {
		for r, b := range blk {
			g[32+8*k+r] = b[4+k]
		}
	}
	for j := 0; j < 32; j++ {
		for r, b := range blk {
			*(*[4]byte)(g[128+32*j+4*r:]) = *(*[4]byte)(b[16+4*j:])
		}
	}
}

// packGroupQ6K is packGroupQ4K for Q6_K.
func packGroupQ6K(gb, src []byte, rb int) {
	g := (*[8 * quant.BlockQ6_KSize]byte)(gb)
	var blk [8]*[quant.BlockQ6_KSize]byte
	for r := range blk {
		blk[r] = (*[quant.BlockQ6_KSize]byte)(src[r*rb:])
	}
	for r, b := range blk {
		g[2*r], g[2*r+1] = b[208], b[209]
	}
	for k := 0; k < 16; k++ {
		for r, b := range blk {
			g[16+8*k+r] = b[192+k]
		}
	}
	for n := 0; n < 2; n++ {
		for i := 0; i < 8; i++ {
			o := 144 + 768*n + 96*i
			for r, b := range blk {
				*(*[4]byte)(g[o+4*r:]) = *(*[4]byte)(b[64*n+4*i:])
			}
			for r, b := range blk {
				*(*[4]byte)(g[o+32+4*r:]) = *(*[4]byte)(b[64*n+32+4*i:])
			}
			for r, b := range blk {
				*(*[4]byte)(g[o+64+4*r:]) = *(*[4]byte)(b[128+32*n+4*i:])
			}
		}
	}
}

// unpackQ6K is unpackQ4K for Q6_K (plain block: ql[128], qh[64],
// scales[16], d).
func unpackQ6K(blk, gb []byte, r int) {
	g := (*[8 * quant.BlockQ6_KSize]byte)(gb)
	b := (*[quant.BlockQ6_KSize]byte)(blk)
	r &= 7
	b[208], b[209] = g[2*r], g[2*r+1]
	for k := 0; k < 16; k++ {
		b[192+k] = g[16+8*k+r]
	}
	for n := 0; n < 2; n++ {
		for i := 0; i < 8; i++ {
			o := 144 + 768*n + 96*i + 4*r
			*(*[4]byte)(b[64*n+4*i:]) = *(*[4]byte)(g[o:])
			*(*[4]byte)(b[64*n+32+4*i:]) = *(*[4]byte)(g[o+32:])
			*(*[4]byte)(b[128+32*n+4*i:]) = *(*[4]byte)(g[o+64:])
		}
	}
}

// MatVecQ4Kx8 is MatVecQ4K for a matrix in the interleaved Q4_K layout;
// rows must be a multiple of Interleave.
func MatVecQ4Kx8(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
	checkX8("MatVecQ4Kx8", len(w), rows, len(a)*quant.BlockQ4_KSize, len(out))
	if rows == 0 || len(a) == 0 {
		clear(out[:rows])
		return
	}
	if cur.q4kx8 != nil {
		cur.q4kx8(w, rows, a, out)
		return
	}
	x8Generic(quant.Q4_K, w, rows, a, out)
}

// MatVecQ6Kx8 is MatVecQ6K for a matrix in the interleaved Q6_K layout;
// rows must be a multiple of Interleave.
func MatVecQ6Kx8(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
	checkX8("MatVecQ6Kx8", len(w), rows, len(a)*quant.BlockQ6_KSize, len(out))
	if rows == 0 || len(a) == 0 {
		clear(out[:rows])
		return
	}
	if cur.q6kx8 != nil {
		cur.q6kx8(w, rows, a, out)
		return
	}
	x8Generic(quant.Q6_K, w, rows, a, out)
}

// MatVecQ8_0x8 is MatVecQ8_0 for a matrix in the interleaved Q8_0 layout;
// rows must be a multiple of Interleave.
func MatVecQ8_0x8(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
	checkX8("MatVecQ8_0x8", len(w), rows, len(a)*quant.BlockQ8_0Size, len(out))
	if rows == 0 || len(a) == 0 {
		clear(out[:rows])
		return
	}
	if cur.q80x8 != nil {
		cur.q80x8(w, rows, a, out)
		return
	}
	// The reference on each row put back in the plain layout, so that the
	// result is exactly the plain reference's (a sum of per-block calls
	// would round differently where the compiler fuses its multiply-add).
	nb := len(a)
	row := make([]byte, nb*quant.BlockQ8_0Size)
	for r := 0; r < rows; r++ {
		RepackedRow(quant.Q8_0, row, w[r/Interleave*Interleave*len(row):], r%Interleave, nb*32)
		out[r] = quant.DotQ8_0(row, a)
	}
}

// MatMulQ8_0x8 is MatMulQ8_0 for a matrix in the interleaved Q8_0 layout.
func MatMulQ8_0x8(w []byte, rows int, x *Q80Batch, out []float32, ldo int) {
	if useGemm(cur.q80x8mm != nil, "MatMulQ8_0x8", len(w), rows, quant.BlockQ8_0Size, len(x.a), x.b, len(out), ldo) {
		checkX8("MatMulQ8_0x8", len(w), rows, len(x.a)/x.b*quant.BlockQ8_0Size, rows)
		cur.q80x8mm(w, rows, x, out, ldo)
		return
	}
	matMulX8("MatMulQ8_0x8", w, rows, x.a, x.b, out, ldo, quant.BlockQ8_0Size, MatVecQ8_0x8, nil)
}

// MatMulQ4Kx8 is MatMulQ4K for a matrix in the interleaved Q4_K layout.
func MatMulQ4Kx8(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	if useGemm(cur.q4kx8mm != nil, "MatMulQ4Kx8", len(w), rows, quant.BlockQ4_KSize, len(x.a), x.b, len(out), ldo) {
		checkX8("MatMulQ4Kx8", len(w), rows, len(x.a)/x.b*quant.BlockQ4_KSize, rows)
		cur.q4kx8mm(w, rows, x, out, ldo)
		return
	}
	matMulX8("MatMulQ4Kx8", w, rows, x.a, x.b, out, ldo, quant.BlockQ4_KSize, MatVecQ4Kx8, cur.q4kx84)
}

// MatMulQ6Kx8 is MatMulQ6K for a matrix in the interleaved Q6_K layout.
func MatMulQ6Kx8(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	if useGemm(cur.q6kx8mm != nil, "MatMulQ6Kx8", len(w), rows, quant.BlockQ6_KSize, len(x.a), x.b, len(out), ldo) {
		checkX8("MatMulQ6Kx8", len(w), rows, len(x.a)/x.b*quant.BlockQ6_KSize, rows)
		cur.q6kx8mm(w, rows, x, out, ldo)
		return
	}
	matMulX8("MatMulQ6Kx8", w, rows, x.a, x.b, out, ldo, quant.BlockQ6_KSize, MatVecQ6Kx8, cur.q6kx84)
}

// matMulX8 is matMul over tiles of whole 8-row groups.
func matMulX8[A any](kind string, w []byte, rows int, a []A, b int, out []float32, ldo, blockBytes int, mv func([]byte, int, []A, []float32), mv4 func([]byte, int, []A, []float32, int)) {
	if b <= 0 || len(a)%b != 0 || ldo < rows || (rows > 0 && len(out) < (b-1)*ldo+rows) {
		panic(fmt.Sprintf("kernels: %s: %d activation blocks for %d tokens, %d rows, ldo %d, %d outputs", kind, len(a), b, rows, ldo, len(out)))
	}
	nb := len(a) / b
	rowBytes := nb * blockBytes
	checkX8(kind, len(w), rows, rowBytes, rows)
	if nb == 0 {
		for t := 0; t < b; t++ {
			clear(out[t*ldo : t*ldo+rows])
		}
		return
	}
	tile := max(Interleave, tileBytes/rowBytes&^(Interleave-1))
	for r0 := 0; r0 < rows; r0 += tile {
		r1 := min(rows, r0+tile)
		wt := w[r0*rowBytes : r1*rowBytes]
		t := 0
		if mv4 != nil {
			for ; t+4 <= b; t += 4 {
				mv4(wt, r1-r0, a[t*nb:(t+4)*nb], out[t*ldo+r0:], ldo)
			}
		}
		for ; t < b; t++ {
			mv(wt, r1-r0, a[t*nb:(t+1)*nb], out[t*ldo+r0:t*ldo+r1])
		}
	}
}

func checkX8(kind string, wlen, rows, rowBytes, outLen int) {
	if rows%Interleave != 0 {
		panic(fmt.Sprintf("kernels: %s: %d rows is not a multiple of %d", kind, rows, Interleave))
	}
	checkQ(kind, wlen, rows, rowBytes, outLen)
}

// x8Generic is the reference for the interleaved kernels: each row's block
// is put back in the plain layout and dotted by the quant reference, block
// by block in order, so the sum is exactly the plain reference's.
func x8Generic(t quant.Type, w []byte, rows int, a []quant.BlockQ8K, out []float32) {
	bs, nb := t.TypeSize(), len(a)
	var blk [quant.BlockQ6_KSize]byte
	for g := 0; g < rows; g += Interleave {
		for r := 0; r < Interleave; r++ {
			var sum float32
			for b := 0; b < nb; b++ {
				gb := w[(g*nb+b*Interleave)*bs : (g*nb+(b+1)*Interleave)*bs]
				if t == quant.Q4_K {
					unpackQ4K(blk[:bs], gb, r)
					sum += quant.DotQ4K(blk[:bs], a[b:b+1])
				} else {
					unpackQ6K(blk[:bs], gb, r)
					sum += quant.DotQ6K(blk[:bs], a[b:b+1])
				}
			}
			out[g+r] = sum
		}
	}
}
