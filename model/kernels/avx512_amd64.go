//go:build !purego

package kernels

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/droidgo/droidgo/model/quant"
	"golang.org/x/sys/cpu"
)

// The avx512 level: AVX-512 F/BW/VL with VNNI (VPDPBUSD, VPDPWSSD) for the
// CPUs that have AVX-512 but no AMX (Zen 4/5, Ice Lake and later), and the
// vector kernels below the amx level on the ones that have both. Its table
// is the avx2 table with the kernels that measured faster in 512-bit form
// replaced, so everything it does not override runs the AVX2 code, never the
// generic one.

// avx512Err says why the avx512 level is missing (nil when it is offered).
var avx512Err error

// avx512Missing names the features the level needs that the CPU or the OS
// lacks (x/sys/cpu only reports AVX-512 when the OS saves the ZMM and mask
// state), or returns nil.
func avx512Missing() error {
	x := cpu.X86
	return missingFeatures([]feature{{"AVX512F", x.HasAVX512F}, {"AVX512DQ", x.HasAVX512DQ},
		{"AVX512BW", x.HasAVX512BW}, {"AVX512VL", x.HasAVX512VL}, {"AVX512_VNNI", x.HasAVX512VNNI}})
}

// feature is a CPU feature a level needs and whether this CPU has it.
type feature struct {
	name string
	has  bool
}

// missingFeatures returns an error naming the features of fs the CPU
// lacks, or nil.
func missingFeatures(fs []feature) error {
	var miss []string
	for _, f := range fs {
		if !f.has {
			miss = append(miss, f.name)
		}
	}
	if len(miss) > 0 {
		return fmt.Errorf("the CPU or OS lacks %s", strings.Join(miss, ", "))
	}
	return nil
}

// newAVX512Table returns the avx512 kernels over below (the avx2 table);
// the BF16 ones only when the CPU has AVX512_BF16. pf is how far ahead the
// two-stream BF16 kernel prefetches (streamPrefetchAMD or ...Intel).
func newAVX512Table(below table, hasBF16 bool, pf int) table {
	t := below
	t.q4kx8mm = q4kx8mmZ
	t.q80mm = q80mmZ
	t.q6kx8mm = q6kx8mmZ
	t.q4kmm = q4kmmZ
	t.q6kmm = q6kmmZ
	t.bf16mm = gemmBF16Of(bf16mmZ)
	// The exact GELU 16 at a time; its contract is a multiple of 8, so a
	// last 8 go through the avx2 kernel.
	t.geluErf = func(y, g, u []float32) {
		n := len(y) &^ 15
		if n > 0 {
			geluErfMulAVX512(&y[0], &g[0], &u[0], n)
		}
		if n < len(y) {
			geluErfMulAVX2(&y[n], &g[n], &u[n], len(y)-n)
		}
	}
	t.geluTab = func(y, g, u, tab []float32) {
		n := len(y) &^ 15
		if n > 0 {
			geluTableAVX512(&y[0], &g[0], &u[0], &tab[0], n)
		}
		if n < len(y) {
			geluTableAVX2(&y[n], &g[n], &u[n], &tab[0], len(y)-n)
		}
	}
	// One token (decode) keeps the avx2 kernels of the interleaved types,
	// which stream the matrix at the memory's speed; the matrix-matrix
	// kernel with a one-token tile was ~25 % faster from L2 on a Sapphire
	// Rapids host, but reads DRAM at half their rate on Zen 5
	// (docs/PERFORMANCE.md, "avxvnni level").
	// BF16 decode with more FMA chains than the avx2 kernel's one per row.
	bf16h2 := func(w *byte, x *float32, n, half int, out *float32) {
		bf16Zh2(w, x, n, half, out, pf)
	}
	t.bf16 = func(w []byte, rows int, x []float32, out []float32) {
		if len(x)%32 != 0 {
			avx2Table.bf16(w, rows, x, out)
			return
		}
		twoStreams(w, rows, 2*len(x), x, out, bf16h2, bf16Z1)
	}
	// The AVX-512 attention row kernels (amx_amd64.go) need only AVX-512F.
	attn512(&t)
	t.expSum = func(x []float32, scale, mx float32) float64 {
		return expSumZ(&x[0], len(x), scale, mx)
	}
	// The 4-token F16 kernel: prefill of F16 weights and, above all,
	// attention over the f16 KV cache (MatMulF16Strided).
	t.f164 = func(w []byte, ws int, x []float32, xs, n, rows int, out []float32, ldo int, acc bool) {
		f16x4Z(&w[0], ws, &x[0], xs, n, rows, &out[0], ldo, acc)
	}
	t.f1616 = func(w []byte, ws int, x []float32, n, rows int, out []float32, ldo int, acc bool) {
		var s [256]float32
		f16x16Z(&w[0], ws, &x[0], n, rows, &out[0], ldo, acc, &s[0])
	}
	_ = hasBF16
	return t
}

// x8mmArgs is what the interleaved matrix-matrix kernels read (field
// offsets are used by the assembly).
type x8mmArgs struct {
	w       unsafe.Pointer // group block 0 of the first of two 8-row groups
	gstride int            // bytes from that group to the next
	a       unsafe.Pointer // block 0 of the tile's first token (avx512, avxvnni Q4_K: the tile in Q8KBatch.tiles)
	astride int            // bytes from one token's blocks to the next (avx512, avxvnni Q4_K: from a chunk to the next, 64*ntok)
	bs      unsafe.Pointer // Q4_K: per token and block, the 8 sub-block sums (int16)
	nb      int            // super-blocks along K
	ntok    int            // tokens in the tile, 1..mmTile
	out     unsafe.Pointer // out[token 0][row 0] of the tile
	ldo     int            // output token stride in bytes
	scr     unsafe.Pointer // 64-byte aligned scratch (mmScratch.buf)
}

//go:noescape
func q4kx8mmAVX512(p *x8mmArgs)

//go:noescape
func q6kx8mmAVX512(p *x8mmArgs)

// q4kPackZ and q6kPackZ interleave 16 rows (row r at src + idx[r], nb
// blocks) into two groups of the layout of repack.go, group 0 at dst and
// group 1 gstride bytes on (packGroupQ4K/packGroupQ6K, with gathers).
//
//go:noescape
func q4kPackZ(src *byte, idx *int32, nb int, dst *byte, gstride int)

//go:noescape
func q6kPackZ(src *byte, idx *int32, nb int, dst *byte, gstride int)

// mmTile is the token tile of the matrix-matrix kernels: its activations
// (mmTile x K/256 x 292 bytes) stay in L2 while every row pair of the
// matrix passes by.
const mmTile = 64

// tileTokBytes is what a token's block takes in Q8KBatch.tiles' layout:
// as many bytes as a quant.BlockQ8K (256 quants, D, 16 bsums), rearranged.
const tileTokBytes = int(unsafe.Sizeof(quant.BlockQ8K{}))

// tiles returns the layout of the batch that the avx512 K-quant kernels
// and the avxvnni Q4_K kernel read: the sums of 32 (bs[8*i+j] for
// sub-block j of block i, token-major as the blocks are) and, from byte
// off, the blocks in token tiles of mmTile. The tile of tokens
// t0..t0+nt-1 starts at off + tileTokBytes*nb*t0; in it, block i starts at
// tileTokBytes*nt*i and holds the block's four 64-quant chunks one after
// the other, each as nt rows of 64 (token t at 64*t), then the nt scales D
// (float32), then the nt bsums (16 int16 each). A kernel then reads a
// chunk of every token of the tile as one stream, instead of blocks 292
// bytes apart with a chunk in two cache lines.
func (x *Q8KBatch) tiles() (bs []int16, lay []byte, off int) {
	a, b := x.a, x.b
	nb := len(a) / b
	off = (16*len(a) + 63) &^ 63
	lay = x.layout(layoutTiles, func(dst []byte, a []quant.BlockQ8K, b int) []byte {
		// 64 bytes more, so the tiles can start on a line (tileBase).
		dst = grow(dst, off+tileTokBytes*len(a)+64)
		subSums(unsafe.Slice((*int16)(unsafe.Pointer(&dst[0])), 8*len(a)), a)
		tiles := dst[tileBase(dst, off):]
		for t0 := 0; t0 < b; t0 += mmTile {
			nt := min(mmTile, b-t0)
			tile := tiles[tileTokBytes*nb*t0:]
			for t := range nt {
				for i := range nb {
					blk := &a[(t0+t)*nb+i]
					dblk := tile[tileTokBytes*nt*i:]
					for c := range 4 {
						*(*[64]int8)(unsafe.Pointer(&dblk[64*(nt*c+t)])) = [64]int8(blk.Qs[64*c:])
					}
					*(*float32)(unsafe.Pointer(&dblk[256*nt+4*t])) = blk.D
					*(*[16]int16)(unsafe.Pointer(&dblk[260*nt+32*t])) = blk.Bsums
				}
			}
		}
		return dst
	})
	return unsafe.Slice((*int16)(unsafe.Pointer(&lay[0])), 8*len(a)), lay, tileBase(lay, off)
}

// tileBase returns the first offset from off at which lay's memory is
// 64-byte aligned.
func tileBase(lay []byte, off int) int {
	return off + int((64-uintptr(unsafe.Pointer(&lay[off]))&63)&63)
}

// mmScratch is one call's working memory, pooled so prefill allocates
// nothing per product.
type mmScratch struct {
	mem [256 + 2*64*mmTile + 64]byte
	pk  []byte // plainmm: one 16-row tile in the interleaved layout
}

var mmPool = sync.Pool{New: func() any { return new(mmScratch) }}

func (s *mmScratch) buf() unsafe.Pointer {
	p := unsafe.Pointer(&s.mem[0])
	return unsafe.Add(p, (64-uintptr(p)&63)&63)
}

// q4kx8mmZ is the avx512 gemmQ8K for interleaved Q4_K: pairs of 8-row
// groups through the VNNI kernel, a leftover group through the kernels of
// the level below.
func q4kx8mmZ(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	x8mm(w, rows, x, out, ldo, quant.BlockQ4_KSize, q4kx8mmAVX512, MatVecQ4Kx8, cur.q4kx84)
}

// q6kx8mmZ is q4kx8mmZ for interleaved Q6_K.
func q6kx8mmZ(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	x8mm(w, rows, x, out, ldo, quant.BlockQ6_KSize, q6kx8mmAVX512, MatVecQ6Kx8, cur.q6kx84)
}

// q4kmmZ is the avx512 gemmQ8K for Q4_K in the file's layout: each 16-row
// tile is interleaved on the fly (once for the whole batch, with gathers) and run
// through the interleaved kernel, so the first prompt of a run, which
// arrives before the background repack, gets the same kernel as the later
// ones.
func q4kmmZ(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	plainmm(w, rows, x, out, ldo, quant.BlockQ4_KSize, q4kPackZ, q4kx8mmAVX512, MatVecQ4K, cur.q4k4)
}

// q6kmmZ is q4kmmZ for Q6_K.
func q6kmmZ(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	plainmm(w, rows, x, out, ldo, quant.BlockQ6_KSize, q6kPackZ, q6kx8mmAVX512, MatVecQ6K, cur.q6k4)
}

func plainmm(w []byte, rows int, x *Q8KBatch, out []float32, ldo, bsize int, pack func(src *byte, idx *int32, nb int, dst *byte, gstride int), kern func(*x8mmArgs), mv func([]byte, int, []quant.BlockQ8K, []float32), mv4 func([]byte, int, []quant.BlockQ8K, []float32, int)) {
	a, b := x.a, x.b
	nb := len(a) / b
	rb := nb * bsize
	r16 := rows &^ 15
	if r16 > 0 {
		s := mmPool.Get().(*mmScratch)
		s.pk = grow(s.pk, 16*rb)
		tiles := newMMTiles(x, bsize, ldo, s)
		tiles.p.w = unsafe.Pointer(&s.pk[0])
		var idx [16]int32
		for r := range idx {
			idx[r] = int32(r * rb)
		}
		for r0 := 0; r0 < r16; r0 += 16 {
			pack(&w[r0*rb], &idx[0], nb, &s.pk[0], Interleave*rb)
			for t0 := 0; t0 < b; t0 += mmTile {
				p := tiles.at(t0)
				p.out = unsafe.Pointer(&out[t0*ldo+r0])
				kern(p)
			}
		}
		mmPool.Put(s)
	}
	if r16 < rows {
		matMul("plainmm", w[r16*rb:], rows-r16, a, b, out[r16:], ldo, bsize, mv, mv4)
	}
}

func x8mm(w []byte, rows int, x *Q8KBatch, out []float32, ldo, bsize int, kern func(*x8mmArgs), mv func([]byte, int, []quant.BlockQ8K, []float32), mv4 func([]byte, int, []quant.BlockQ8K, []float32, int)) {
	a, b := x.a, x.b
	nb := len(a) / b
	rb := nb * bsize
	r16 := rows &^ 15
	if r16 > 0 {
		tiledMM(w, r16, 16, x, out, ldo, bsize, kern)
	}
	if r16 < rows {
		matMulX8("x8mm", w[r16*rb:], rows-r16, a, b, out[r16:], ldo, bsize, mv, mv4)
	}
}

// tiledMM runs kern over every group of step rows (rows a multiple of
// step, bsize bytes per block) for every token tile of batch x, which the
// kernel reads in its token tiles (Q8KBatch.tiles).
func tiledMM(w []byte, rows, step int, x *Q8KBatch, out []float32, ldo, bsize int, kern func(*x8mmArgs)) {
	rb := len(x.a) / x.b * bsize
	s := mmPool.Get().(*mmScratch)
	tiles := newMMTiles(x, bsize, ldo, s)
	for t0 := 0; t0 < x.b; t0 += mmTile {
		p := tiles.at(t0)
		for r0 := 0; r0 < rows; r0 += step {
			p.w = unsafe.Pointer(&w[r0*rb])
			p.out = unsafe.Pointer(&out[t0*ldo+r0])
			kern(p)
		}
	}
	mmPool.Put(s)
}

// mmTiles sets the activation arguments of the 16-row K-quant kernels
// per token tile, from the batch's token tiles (tiles).
type mmTiles struct {
	x    *Q8KBatch
	nb   int
	bs   []int16
	lay  []byte
	base int
	p    x8mmArgs
}

// newMMTiles returns the tiles of batch x for a product of rows of bsize
// bytes per block into an output of stride ldo, with s's scratch.
func newMMTiles(x *Q8KBatch, bsize, ldo int, s *mmScratch) mmTiles {
	nb := len(x.a) / x.b
	m := mmTiles{x: x, nb: nb}
	m.bs, m.lay, m.base = x.tiles()
	m.p = x8mmArgs{gstride: Interleave * nb * bsize, nb: nb, ldo: 4 * ldo, scr: s.buf()}
	return m
}

// at returns the arguments for the tile of tokens from t0 but its weights
// and output.
func (m *mmTiles) at(t0 int) *x8mmArgs {
	p := &m.p
	p.ntok = min(mmTile, m.x.b-t0)
	p.bs = unsafe.Pointer(&m.bs[8*t0*m.nb])
	p.a = unsafe.Pointer(&m.lay[m.base+tileTokBytes*m.nb*t0])
	p.astride = 64 * p.ntok
	return p
}

// q80mmArgs is what q80mmAVX512 reads (field offsets are used by the
// assembly).
type q80mmArgs struct {
	pk      unsafe.Pointer // the packed 16-row tile (q80packZ)
	nb      int            // blocks along K
	a       unsafe.Pointer // block 0 of the tile's first token
	astride int            // bytes from one token's blocks to the next
	nc      unsafe.Pointer // per token and block, -128 * the sum of its quants (int32)
	ntok    int            // tokens in the tile, 1..mmTile
	out     unsafe.Pointer // out[token 0][row 0] of the tile
	ldo     int            // output token stride in bytes
	fsum    unsafe.Pointer // mmTile x 16 float32 scratch
}

//go:noescape
func q80packZ(src *byte, idx *int32, nb int, dst *byte)

//go:noescape
func q80mmAVX512(p *q80mmArgs)

//go:noescape
func q80NegSums(a *quant.BlockQ8_0, n int, out *int32)

// q80Scratch is q80mmZ's working memory.
type q80Scratch struct {
	fsum [16*mmTile + 16]float32
	pk   []byte
	nc   []int32
}

var q80Pool = sync.Pool{New: func() any { return new(q80Scratch) }}

// q80mmZ is the avx512 gemmQ80: each 16-row tile is packed once and
// multiplied with every token of the batch, leftover rows go to the vector
// kernels of the level below.
func q80mmZ(w []byte, rows int, x *Q80Batch, out []float32, ldo int) {
	a, b := x.a, x.b
	nb := len(a) / b
	rb := nb * quant.BlockQ8_0Size
	r16 := rows &^ 15
	if r16 > 0 {
		s := q80Pool.Get().(*q80Scratch)
		s.pk = grow(s.pk, 576*nb+64)
		pk := unsafe.Add(unsafe.Pointer(&s.pk[0]), (64-uintptr(unsafe.Pointer(&s.pk[0]))&63)&63)
		s.nc = grow(s.nc, len(a))
		q80NegSums(&a[0], len(a), &s.nc[0])
		var idx [16]int32
		for r := range idx {
			idx[r] = int32(r * rb)
		}
		fsum := unsafe.Add(unsafe.Pointer(&s.fsum[0]), (64-uintptr(unsafe.Pointer(&s.fsum[0]))&63)&63)
		p := q80mmArgs{pk: pk, nb: nb, astride: nb * int(unsafe.Sizeof(a[0])), ldo: 4 * ldo, fsum: fsum}
		for r0 := 0; r0 < r16; r0 += 16 {
			q80packZ(&w[r0*rb], &idx[0], nb, (*byte)(pk))
			for t0 := 0; t0 < b; t0 += mmTile {
				p.ntok = min(mmTile, b-t0)
				p.a, p.nc = unsafe.Pointer(&a[t0*nb]), unsafe.Pointer(&s.nc[t0*nb])
				p.out = unsafe.Pointer(&out[t0*ldo+r0])
				q80mmAVX512(&p)
			}
		}
		q80Pool.Put(s)
	}
	if r16 < rows {
		matMul("MatMulQ8_0", w[r16*rb:], rows-r16, a, b, out[r16:], ldo, quant.BlockQ8_0Size, MatVecQ8_0, cur.q804)
	}
}

//go:noescape
func bf16pack2Z(src *byte, idx *int32, n2 int, dst *float32)

//go:noescape
func bf16xt8Z(x *float32, idx *int32, n int, dst *float32)

//go:noescape
func bf16mm32AVX512(pk *float32, xt *float32, n2 int, ntok int, out *float32, ldo int)

// bf16Scratch is bf16mmZ's working memory.
type bf16Scratch struct {
	pk []float32 // the converted, transposed 32-row tile
	xt []float32 // the batch's activations, 8 tokens at a time, transposed
}

var bf16Pool = sync.Pool{New: func() any { return new(bf16Scratch) }}

// bf16mmZ is the avx512 gemmFloat for BF16: each 32-row tile is converted
// to float32 once and multiplied with every 8-token tile of the batch (the
// 8 tokens' elements broadcast once each for both 16-row halves: 10 loads
// per 16 FMAs; measured ~15 % faster at 256 tokens than 16x16 tiles with
// one broadcast per FMA, and no slower at 64); leftover rows and odd K go
// to the kernels of the level below.
func bf16mmZ(w []byte, rows int, x []float32, b int, out []float32, ldo int) {
	n := len(x) / b
	r32 := rows &^ 31
	if n%2 != 0 {
		r32 = 0
	}
	if r32 > 0 {
		s := bf16Pool.Get().(*bf16Scratch)
		tiles := (b + 7) / 8
		s.xt = grow(s.xt, tiles*8*n)
		var idx [32]int32
		for tile := 0; tile < tiles; tile++ {
			// A last partial tile gathers its last token again in the
			// missing places; their sums are never stored.
			for t := 0; t < 8; t++ {
				idx[t] = int32(4 * n * min(t, b-1-8*tile))
			}
			bf16xt8Z(&x[8*tile*n], &idx[0], n, &s.xt[tile*8*n])
		}
		s.pk = grow(s.pk, 32*n+16)
		pk := s.pk[(16-int(uintptr(unsafe.Pointer(&s.pk[0]))&63)/4)&15:]
		for r := range idx {
			idx[r] = int32(2 * r * n)
		}
		for r0 := 0; r0 < r32; r0 += 32 {
			bf16pack2Z(&w[2*r0*n], &idx[0], n/2, &pk[0])
			for tile := 0; tile < tiles; tile++ {
				bf16mm32AVX512(&pk[0], &s.xt[tile*8*n], n/2, min(8, b-8*tile), &out[8*tile*ldo+r0], 4*ldo)
			}
		}
		bf16Pool.Put(s)
	}
	if r32 < rows {
		matMulFloat("MatMulBF16", w[2*r32*n:], rows-r32, x, b, out[r32:], ldo, 2, MatVecBF16, cur.bf164)
	}
}

// vnniPeakZ and bf16PeakZ run n x 12 independent zmm VPDPBUSD (64
// multiply-adds each) or VDPBF16PS (32 each): the core's peak, for
// BenchmarkPeak.
//
//go:noescape
func vnniPeakZ(n int)

//go:noescape
func bf16PeakZ(n int)

// fmaPeakZ is vnniPeakZ for zmm VFMADD231PS (16 multiply-adds each).
//
//go:noescape
func fmaPeakZ(n int)

// bf16Zh2 is bf16AVX2h2 in zmm registers, for n a multiple of 32
// (bf16mvz_amd64.s).
//
//go:noescape
func bf16Zh2(w *byte, x *float32, n, half int, out *float32, pf int)

// bf16Z1 is bf16Zh2 one row at a time, summing each row as bf16Zh2 does.
//
//go:noescape
func bf16Z1(w *byte, x *float32, n, rows int, out *float32)

// expSumZ is ExpSum for n > 0 (softmax512_amd64.s).
//
//go:noescape
func expSumZ(x *float32, n int, scale, mx float32) float64

// f16x4Z is f16AVX2x4 in 512-bit form (f16x4z_amd64.s).
//
//go:noescape
func f16x4Z(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)

// f16x16Z is f16x4Z for 16 vectors f16x16Stride floats apart, s 256
// floats of scratch (f16x16z_amd64.s).
//
//go:noescape
func f16x16Z(w *byte, ws int, x *float32, n, rows int, out *float32, ldo int, acc bool, s *float32)

//go:noescape
func dotRows512(q, k *float32, stride, n, d int, out *float32)

//go:noescape
func axpyRows512(p, v *float32, stride, n, d int, o *float32)

// attn512 puts the AVX-512 attention helpers into t for row lengths that
// are multiples of 16 (the AVX2 ones of below stay for the others).
func attn512(t *table) {
	dot2, axpy2 := t.dotRows, t.axpyRows
	t.dotRows = func(q, k []float32, stride int, out []float32) {
		if len(q)%16 != 0 {
			dot2(q, k, stride, out)
			return
		}
		dotRows512(&q[0], &k[0], stride, len(out), len(q), &out[0])
	}
	t.axpyRows = func(p, v []float32, stride int, o []float32) {
		if len(o)%16 != 0 {
			axpy2(p, v, stride, o)
			return
		}
		axpyRows512(&p[0], &v[0], stride, len(p), len(o), &o[0])
	}
}

//go:noescape
func geluErfMulAVX512(y, gate, u *float32, n int)

//go:noescape
func geluTableAVX512(y, gate, u, tab *float32, n int)
