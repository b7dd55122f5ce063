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
// the avx2 table with the products of interleaved Q4_K, Q6_K and Q8_0
// matrices replaced (so Q8_0 matrices are repacked at this level too): 4
// tokens and whole batches run one 8-row kernel per type (q4kx8VNNI,
// q6kx8VNNI, q80x8VNNI), and one token (decode) runs a kernel that gives
// bit for bit the same result but streams the matrix at the memory's speed:
// the avx2 level's q4kx8AVX2 and q6kx8AVX2 (the VNNI kernels finish a block
// in their order), and q80x8VNNI1; 4 tokens of Q4_K run q4kx8AVX2x4. So
// a token's result does not depend on the batch it comes in. Matrices
// still in the file's layout (before the background repack) keep the avx2
// kernels for every batch size, for the same reason. On CPUs with AVX-512
// as well, the avx512 and amx levels are above it (DROIDGO_ISA=avxvnni
// selects it there).

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
	q80x81              func(p *x8mmArgs) // q80x8 for one token
}

var vnniAsm = vnniKernels{q4kx8: q4kx8VNNI, q6kx8: q6kx8VNNI, q80x8: q80x8VNNI, q80x81: q80x8VNNI1}

// newAVXVNNITable returns the avxvnni level's table: below (the avx2
// table, whose one-token Q4_K and Q6_K kernels and 4-token Q4_K kernel it
// keeps: faster on Zen 5, BenchmarkGemm b=8 115-120 against 76-85 GMAC/s) with
// the kernels of k.
func newAVXVNNITable(below table, k vnniKernels) table {
	t := below
	t.q4kx8mm = func(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
		tiledMM(w, rows, Interleave, x, out, ldo, quant.BlockQ4_KSize, k.q4kx8)
	}
	_, t.q6kx84, t.q6kx8mm = x8Entries(quant.BlockQ6_KSize, k.q6kx8)
	t.q80x8 = func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
		q80x8V(w, rows, a, 1, out, rows, k.q80x81)
	}
	t.q80x8mm = func(w []byte, rows int, x *Q80Batch, out []float32, ldo int) {
		q80x8V(w, rows, x.a, x.b, out, ldo, k.q80x8)
	}
	return t
}

// q80x8V multiplies the interleaved Q8_0 matrix w (rows a multiple of 8)
// by the b tokens of a with kern, which starts every token's block sum at
// -128 times the sum of its quants (the weights are biased to unsigned).
func q80x8V(w []byte, rows int, a []quant.BlockQ8_0, b int, out []float32, ldo int, kern func(*x8mmArgs)) {
	nb := len(a) / b
	rb := nb * quant.BlockQ8_0Size
	s := q80Pool.Get().(*q80Scratch)
	s.nc = grow(s.nc, len(a))
	q80NegSums(&a[0], len(a), &s.nc[0])
	scr := mmPool.Get().(*mmScratch)
	p := x8mmArgs{astride: nb * int(unsafe.Sizeof(a[0])), nb: nb, ldo: 4 * ldo, scr: scr.buf()}
	for t0 := 0; t0 < b; t0 += mmTile {
		p.a, p.ntok = unsafe.Pointer(&a[t0*nb]), min(mmTile, b-t0)
		p.bs = unsafe.Pointer(&s.nc[t0*nb])
		for r0 := 0; r0 < rows; r0 += Interleave {
			p.w = unsafe.Pointer(&w[r0*rb])
			p.out = unsafe.Pointer(&out[t0*ldo+r0])
			kern(&p)
		}
	}
	mmPool.Put(scr)
	q80Pool.Put(s)
}

// x8Entries returns the one-token, 4-token and matrix-matrix table entries
// of an interleaved K-quant type whose kernel reads Q8_K blocks (bsize
// bytes per weight block), all three running kern through x8V.
func x8Entries(bsize int, kern func(*x8mmArgs)) (func([]byte, int, []quant.BlockQ8K, []float32), func([]byte, int, []quant.BlockQ8K, []float32, int), gemmQ8K) {
	return func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
			x8V(w, rows, a, 1, out, rows, bsize, kern)
		}, func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
			x8V(w, rows, a, 4, out, ldo, bsize, kern)
		}, func(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
			x8V(w, rows, x.a, x.b, out, ldo, bsize, kern)
		}
}

// x8V multiplies the interleaved K-quant matrix w (rows a multiple of 8,
// bsize bytes per block) by the b tokens of a: kern over every 8-row group
// for every tile of up to mmTile tokens.
func x8V(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo, bsize int, kern func(*x8mmArgs)) {
	nb := len(a) / b
	rb := nb * bsize
	s := mmPool.Get().(*mmScratch)
	p := x8mmArgs{astride: nb * int(unsafe.Sizeof(a[0])), nb: nb, ldo: 4 * ldo, scr: s.buf()}
	for t0 := 0; t0 < b; t0 += mmTile {
		p.a, p.ntok = unsafe.Pointer(&a[t0*nb]), min(mmTile, b-t0)
		for r0 := 0; r0 < rows; r0 += Interleave {
			p.w = unsafe.Pointer(&w[r0*rb])
			p.out = unsafe.Pointer(&out[t0*ldo+r0])
			kern(&p)
		}
	}
	mmPool.Put(s)
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

// q80x8VNNI is one 8-row group of the interleaved Q8_0 layout times a tile
// of tokens, p.bs holding -128 times the sum of every token's block
// (avxvnni_amd64.s), and q80x8VNNI1 the same for one token;
// q80x8VNNIAsAVX2 and q80x8VNNI1AsAVX2 are their AVX2 twins.
//
//go:noescape
func q80x8VNNI(p *x8mmArgs)

//go:noescape
func q80x8VNNIAsAVX2(p *x8mmArgs)

//go:noescape
func q80x8VNNI1(p *x8mmArgs)

//go:noescape
func q80x8VNNI1AsAVX2(p *x8mmArgs)
