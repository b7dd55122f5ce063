//go:build !purego

package kernels

import (
	"unsafe"

	"github.com/droidgo/droidgo/model/quant"
	"golang.org/x/sys/cpu"
)

// The avxvnni level: AVX2 plus AVX-VNNI, the VEX-encoded 256-bit VPDPBUSD
// and VPDPWSSD of the client cores that have no AVX-512 (Intel Alder Lake
// to Arrow Lake, Lunar Lake; AMD Zen 5 has it beside AVX-512). Its table is
// the avx2 table with the products of interleaved Q4_K and Q6_K matrices
// replaced: one token, 4 tokens and whole batches all run the same 8-row
// kernel (q4kx8VNNI, q6kx8VNNI), so a token's result does not depend on the
// batch it comes in; batches of 16 or more tokens over file-layout rows are
// interleaved in Go, 8 rows at a time, and run them too, as do batches of
// Q8_0 rows (q80x8VNNI, with the weights biased to unsigned bytes). On CPUs with AVX-512 as well, the avx512 and amx levels are above it
// (DROIDGO_ISA=avxvnni selects it there).

// avxvnniErr says why the avxvnni level is missing (nil when it is offered).
var avxvnniErr error

// avxvnniMissing names the features the level needs that the CPU or the
// OS lacks (x/sys/cpu reports AVX-VNNI only when the OS saves the YMM
// state), or returns nil.
func avxvnniMissing() error {
	x := cpu.X86
	return missingFeatures([]feature{{"AVX2", x.HasAVX2}, {"FMA", x.HasFMA}, {"F16C", x.HasF16C}, {"AVX_VNNI", x.HasAVXVNNI}})
}

// vnniKernels are the assembly kernels of the level: the VNNI ones, or
// (for the tests on CPUs without AVX-VNNI) their AVX2 twins.
type vnniKernels struct {
	q4kx8, q6kx8, q80x8 func(p *x8mmArgs)
}

var vnniAsm = vnniKernels{q4kx8: q4kx8VNNI, q6kx8: q6kx8VNNI, q80x8: q80x8VNNI}

// newAVXVNNITable returns the avxvnni level's table: below with the
// kernels of k.
func newAVXVNNITable(below table, k vnniKernels) table {
	t := below
	const q4, q6 = quant.BlockQ4_KSize, quant.BlockQ6_KSize
	t.q4kx8 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		x8V(w, rows, a, 1, out, rows, q4, k.q4kx8)
	}
	t.q4kx84 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
		x8V(w, rows, a, 4, out, ldo, q4, k.q4kx8)
	}
	t.q4kx8mm = func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		x8V(w, rows, a, b, out, ldo, q4, k.q4kx8)
	}
	t.q4kmm = func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		plainV(w, rows, a, b, out, ldo, q4, packGroupQ4K, k.q4kx8, MatVecQ4K, below.q4k4)
	}
	t.q6kx8 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		x8V(w, rows, a, 1, out, rows, q6, k.q6kx8)
	}
	t.q6kx84 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
		x8V(w, rows, a, 4, out, ldo, q6, k.q6kx8)
	}
	t.q6kx8mm = func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		x8V(w, rows, a, b, out, ldo, q6, k.q6kx8)
	}
	t.q6kmm = func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		plainV(w, rows, a, b, out, ldo, q6, packGroupQ6K, k.q6kx8, MatVecQ6K, below.q6k4)
	}
	t.q80mm = func(w []byte, rows int, a []quant.BlockQ8_0, b int, out []float32, ldo int) {
		q80V(w, rows, a, b, out, ldo, k.q80x8, below.q804)
	}
	return t
}

// q80V is the avxvnni matrix-matrix product of Q8_0 rows in the file's
// layout: each group of 8 rows is interleaved once for the whole batch
// (packGroupQ80) and multiplied with every tile of tokens by kern; a last
// partial group goes to the kernels of the level below.
func q80V(w []byte, rows int, a []quant.BlockQ8_0, b int, out []float32, ldo int, kern func(*x8mmArgs), mv4 func([]byte, int, []quant.BlockQ8_0, []float32, int)) {
	nb := len(a) / b
	rb := nb * quant.BlockQ8_0Size
	r8 := rows &^ (Interleave - 1)
	if r8 > 0 {
		s := q80Pool.Get().(*q80Scratch)
		s.pk = grow(s.pk, Interleave*rb)
		s.nc = grow(s.nc, len(a))
		for i := range a {
			var sum int32
			for _, q := range a[i].Qs {
				sum += int32(q)
			}
			s.nc[i] = -128 * sum
		}
		scr := mmPool.Get().(*mmScratch)
		p := x8mmArgs{astride: nb * int(unsafe.Sizeof(a[0])), nb: nb, ldo: 4 * ldo, scr: scr.buf()}
		gb := Interleave * quant.BlockQ8_0Size
		for r0 := 0; r0 < r8; r0 += Interleave {
			for i := 0; i < nb; i++ {
				packGroupQ80(s.pk[i*gb:(i+1)*gb], w[r0*rb+i*quant.BlockQ8_0Size:], rb)
			}
			p.w = unsafe.Pointer(&s.pk[0])
			for t0 := 0; t0 < b; t0 += mmTile {
				p.a, p.ntok = unsafe.Pointer(&a[t0*nb]), min(mmTile, b-t0)
				p.bs = unsafe.Pointer(&s.nc[t0*nb])
				p.out = unsafe.Pointer(&out[t0*ldo+r0])
				kern(&p)
			}
		}
		mmPool.Put(scr)
		q80Pool.Put(s)
	}
	if r8 < rows {
		matMul("MatMulQ8_0", w[r8*rb:], rows-r8, a, b, out[r8:], ldo, quant.BlockQ8_0Size, MatVecQ8_0, mv4)
	}
}

// x8V multiplies the interleaved K-quant matrix w (rows a multiple of 8,
// bsize bytes per block) by the b tokens of a with kern.
func x8V(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo, bsize int, kern func(*x8mmArgs)) {
	s := mmPool.Get().(*mmScratch)
	if bsize == quant.BlockQ4_KSize {
		s.bs = subSums(s.bs, a)
	}
	x8Groups(w, rows, a, b, s, out, ldo, bsize, kern)
	mmPool.Put(s)
}

// plainV is x8V for a matrix in the file's layout: each group of 8 rows is
// interleaved once for the whole batch (pack, as Repack does), a last
// partial group goes to the kernels of the level below (mv, mv4).
func plainV(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo, bsize int, pack func(gb, src []byte, rb int), kern func(*x8mmArgs), mv func([]byte, int, []quant.BlockQ8K, []float32), mv4 func([]byte, int, []quant.BlockQ8K, []float32, int)) {
	nb := len(a) / b
	rb := nb * bsize
	r8 := rows &^ (Interleave - 1)
	if r8 > 0 {
		s := mmPool.Get().(*mmScratch)
		if bsize == quant.BlockQ4_KSize {
			s.bs = subSums(s.bs, a)
		}
		s.pk = grow(s.pk, Interleave*rb)
		gb := Interleave * bsize
		for r0 := 0; r0 < r8; r0 += Interleave {
			for i := 0; i < nb; i++ {
				pack(s.pk[i*gb:(i+1)*gb], w[r0*rb+i*bsize:], rb)
			}
			x8Groups(s.pk, Interleave, a, b, s, out[r0:], ldo, bsize, kern)
		}
		mmPool.Put(s)
	}
	if r8 < rows {
		matMul("plainV", w[r8*rb:], rows-r8, a, b, out[r8:], ldo, bsize, mv, mv4)
	}
}

// x8Groups runs kern over every 8-row group of the interleaved matrix w for
// every tile of up to mmTile tokens; for Q4_K s.bs holds the sub-block
// sums of all of a (subSums).
func x8Groups(w []byte, rows int, a []quant.BlockQ8K, b int, s *mmScratch, out []float32, ldo, bsize int, kern func(*x8mmArgs)) {
	nb := len(a) / b
	rb := nb * bsize
	p := x8mmArgs{astride: nb * int(unsafe.Sizeof(a[0])), nb: nb, ldo: 4 * ldo, scr: s.buf()}
	for t0 := 0; t0 < b; t0 += mmTile {
		p.a, p.ntok = unsafe.Pointer(&a[t0*nb]), min(mmTile, b-t0)
		if bsize == quant.BlockQ4_KSize {
			p.bs = unsafe.Pointer(&s.bs[8*t0*nb])
		}
		for r0 := 0; r0 < rows; r0 += Interleave {
			p.w = unsafe.Pointer(&w[r0*rb])
			p.out = unsafe.Pointer(&out[t0*ldo+r0])
			kern(&p)
		}
	}
}

// q4kx8VNNI and q6kx8VNNI are one 8-row group of the interleaved Q4_K or
// Q6_K layout times a tile of tokens (avxvnni_amd64.s); the ...AsAVX2
// kernels are the same with every VNNI instruction replaced by its AVX2
// equivalent.
//
//go:noescape
func q4kx8VNNI(p *x8mmArgs)

//go:noescape
func q4kx8VNNIAsAVX2(p *x8mmArgs)

//go:noescape
func q6kx8VNNI(p *x8mmArgs)

//go:noescape
func q6kx8VNNIAsAVX2(p *x8mmArgs)

// q80x8VNNI is one 8-row group of interleaved Q8_0 rows times a tile of
// tokens, p.bs holding -128 times the sum of every token's block
// (avxvnni_amd64.s); q80x8VNNIAsAVX2 is its AVX2 twin.
//
//go:noescape
func q80x8VNNI(p *x8mmArgs)

//go:noescape
func q80x8VNNIAsAVX2(p *x8mmArgs)
