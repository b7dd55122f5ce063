//go:build !purego

package kernels

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/droidgo/droidgo/model/quant"
	"golang.org/x/sys/cpu"
)

// AMX (Intel Advanced Matrix Extensions) prefill kernels. Eight tile
// registers of up to 16 rows x 64 bytes and one matrix instruction,
// TDPBSSD and relatives (16x16 int32 += 16x64 int8 . 64x16 int8) or
// TDPBF16PS (16x16 f32 += 16x32 bf16 . 32x16 bf16), do in one instruction
// what takes 256 AVX-512 VNNI instructions. They only pay for batches
// (prefill): decode stays on the vector kernels.
//
// Layout: a tile of 16 weight rows is unpacked once into the B-tile form
// (K/4 rows of 64 bytes, row k holding 4 consecutive weights of each of the
// 16 rows; for BF16 K/2 rows of pairs), then every tile of up to 16 tokens
// is multiplied with it. A tiles are loaded from the batch's activations
// laid out in token tiles (qkTiles, q80Tiles, narrowBF16), once per batch
// for every product and row chunk that reads it (Q8KBatch, Q80Batch,
// BF16Batch): never re-quantised, and not copied per chunk. K-quant
// weights are unpacked as scale*q in two byte planes (see qkAMX and
// amxunpack_amd64.s), so one super-block needs no per-sub-block work
// outside the tiles.
//
// The tile state never lives across Go code: each assembly call loads the
// tile configuration, runs its loop and releases the tiles (TILERELEASE)
// before returning, and Go never preempts inside assembly.

// tileCfg is the 64-byte operand of LDTILECFG (palette 1).
type tileCfg struct {
	palette  uint8
	startRow uint8
	_        [14]byte
	colsb    [16]uint16
	rows     [16]uint8
}

// amxArgs is what the assembly kernels read; pointers stay unsafe.Pointer
// so the collector sees them for the duration of the call.
type amxArgs struct {
	cfg     unsafe.Pointer // *tileCfg
	a       unsafe.Pointer // first activation quant of the token tile
	astride int            // bytes from one token's activations to the next
	w       unsafe.Pointer // the unpacked weight tile
	ws      unsafe.Pointer // Q8_0: per-block weight scales; BF16 2x2: the second row tile
	da      unsafe.Pointer // per-block activation scales, [block][16 tokens] (q80Tiles)
	nb      int            // blocks along K
	out     unsafe.Pointer // out[token 0][row 0] of the tile
	ldo     int            // output token stride in bytes
	ntok    int            // tokens in the tile, 1..16
	cbuf    unsafe.Pointer // 64-byte aligned scratch for accumulator tiles
	astep   int            // bytes from one block of the activations to the next
}

//go:noescape
func amxQ80(p *amxArgs)

// amxScratch is one call's working memory, pooled so prefill allocates
// nothing per product.
type amxScratch struct {
	cfg  [2]tileCfg // full token tile, last partial tile
	kind [2]cfgKind
	cmem [4096 + 64]byte
	pk   []byte
	ws   []float32
	grp  []byte
	accb []byte // K-quant sums of every token tile
	ob   []float32
	// planes is the byte transpose of 16 rows' block heads.
	planes [256]byte
}

var amxPool = sync.Pool{New: func() any { return new(amxScratch) }}

// cbuf returns the 64-byte aligned accumulator scratch.
func (s *amxScratch) cbuf() unsafe.Pointer {
	p := unsafe.Pointer(&s.cmem[0])
	return unsafe.Add(p, (64-uintptr(p)&63)&63)
}

// cfgFor returns the tile configuration of kernel kind for a token tile of
// ntok rows, set up by set (the scratch is pooled across kernels, so a
// configuration is reused only for the same kind and token count).
func (s *amxScratch) cfgFor(kind cfgKind, ntok int, set func(c *tileCfg, ntok int)) unsafe.Pointer {
	i := 0
	if ntok < 16 {
		i = 1
	}
	c := &s.cfg[i]
	if s.kind[i] != kind || int(c.rows[0]) != ntok {
		*c = tileCfg{palette: 1}
		set(c, ntok)
		s.kind[i] = kind
	}
	return unsafe.Pointer(c)
}

// cfgKind names the tile configuration of each kernel.
type cfgKind uint8

const (
	cfgNone cfgKind = iota
	cfgQ80
	cfgQK
	cfgBF16
	cfgHalf
)

// setQ80Cfg: tmm0 and tmm1 = A (tokens x 32 bytes: one Q8_0 block), tmm2
// and tmm3 = B (8 rows of 16 x 4 weight bytes), the pairs taken by
// alternate blocks; tmm4-tmm7 = C (tokens x 16 int32), a ring of four
// blocks in flight.
func setQ80Cfg(c *tileCfg, ntok int) {
	for i := 0; i < 2; i++ {
		c.rows[i], c.colsb[i] = uint8(ntok), 32
		c.rows[2+i], c.colsb[2+i] = 8, 64
	}
	for i := 4; i < 8; i++ {
		c.rows[i], c.colsb[i] = uint8(ntok), 64
	}
}

// packQ80 unpacks 16 Q8_0 rows (row r at src[r*rb:]) of nb blocks into B
// tiles (pk[512*b + 64*k + 4*r + j] = weight 4k+j of row r in block b) and
// their scales (ws[16*b+r]).
func packQ80(pk []byte, ws []float32, src []byte, rb, nb int) {
	pk = pk[:512*nb]
	ws = ws[:16*nb]
	for r := 0; r < 16; r++ {
		row := src[r*rb : r*rb+nb*quant.BlockQ8_0Size]
		for b := 0; b < nb; b++ {
			blk := row[b*quant.BlockQ8_0Size:]
			ws[16*b+r] = quant.FP16ToFP32(uint16(blk[0]) | uint16(blk[1])<<8)
			dst := pk[512*b+4*r:]
			for k := 0; k < 8; k++ {
				*(*[4]byte)(dst[64*k:]) = *(*[4]byte)(blk[2+4*k:])
			}
		}
	}
}

// q80Tiles lays out the b tokens of Q8_0 blocks a (nb per token) for
// amxQ80: block blk of token t goes to
//   - its 32 quants at qs[((t/16)*nb+blk)*512 + (t%16)*32:] (one A tile,
//     16 tokens x 32 bytes, in 512 contiguous bytes: loaded in place, the
//     tokens' blocks lay a row of blocks apart, 16 lines for 512 bytes);
//   - its scale at da[((t/16)*nb+blk)*16 + t%16].
//
// Both live in one buffer (q80Views finds them); the missing tokens of a
// last partial tile get zeros. It is built once per Q80Batch: the token
// scales were gathered again by every row chunk of every product.
func q80Tiles(dst []byte, a []quant.BlockQ8_0, b int) []byte {
	nb := len(a) / b
	dst = grow(dst, (b+15)/16*nb*(512+64)+64)
	qs, da := q80Views(dst, b, nb)
	if t0 := b &^ 15; t0 < b { // the last tile, at the end of both
		clear(qs[t0*nb*32:])
		clear(da[t0*nb:])
	}
	for t := 0; t < b; t++ {
		base := (t/16)*nb*16 + t%16
		for blk := 0; blk < nb; blk++ {
			x := &a[t*nb+blk]
			i := base + 16*blk
			*(*[32]int8)(unsafe.Pointer(&qs[32*i])) = x.Qs
			da[i] = x.D
		}
	}
	return dst
}

// q80Views returns the quants (64-byte aligned) and scales that q80Tiles
// lays out in buf for b tokens of nb blocks.
func q80Views(buf []byte, b, nb int) (qs []byte, da []float32) {
	n := (b + 15) / 16 * nb * 16 // token places
	off := int((64 - uintptr(unsafe.Pointer(&buf[0]))&63) & 63)
	qs = buf[off : off+32*n]
	da = unsafe.Slice((*float32)(unsafe.Pointer(&buf[off+32*n])), n)
	_ = buf[off+36*n-1]
	return qs, da
}

// q80AMX is the AMX gemmQ80: 16-row tiles through the tile kernel, leftover
// rows through the vector kernels of the level below.
func q80AMX(w []byte, rows int, x *Q80Batch, out []float32, ldo int) {
	a, b := x.a, x.b
	nb := len(a) / b
	rb := nb * quant.BlockQ8_0Size
	r16 := rows &^ 15
	if r16 == 0 {
		matMul("MatMulQ8_0", w, rows, a, b, out, ldo, quant.BlockQ8_0Size, MatVecQ8_0, cur.q804)
		return
	}
	s := amxPool.Get().(*amxScratch)
	defer amxPool.Put(s)
	qs, da := q80Views(x.get(layoutAMXQ80, func(dst []byte) []byte { return q80Tiles(dst, a, b) }), b, nb)
	pk := align64(&s.pk, 512*nb)
	s.ws = grow(s.ws, 16*nb)
	ob := s.outBuf(b * r16)
	p := amxArgs{astride: 32, astep: 512, nb: nb, ldo: 4 * r16, cbuf: s.cbuf(),
		w: unsafe.Pointer(&pk[0]), ws: unsafe.Pointer(&s.ws[0])}
	for r0 := 0; r0 < r16; r0 += 16 {
		packQ80AMX(&pk[0], &s.ws[0], &w[r0*rb], rb, nb)
		for t0 := 0; t0 < b; t0 += 16 {
			p.ntok = min(16, b-t0)
			p.cfg = s.cfgFor(cfgQ80, p.ntok, setQ80Cfg)
			p.a = unsafe.Pointer(&qs[t0*nb*32])
			p.da = unsafe.Pointer(&da[t0*nb])
			p.out = unsafe.Pointer(&ob[t0*r16+r0])
			amxQ80(&p)
		}
	}
	flushOut(out, ldo, ob, b, r16)
	if r16 < rows {
		matMul("MatMulQ8_0", w[r16*rb:], rows-r16, a, b, out[r16:], ldo, quant.BlockQ8_0Size, MatVecQ8_0, cur.q804)
	}
}

// amxUsable decides whether the AMX level may be offered: the CPU must say
// so, the kernel must grant the tile state, and a probe product must give
// the reference answer (an emulator or a kernel that mishandles the state
// is refused here rather than trusted).
func amxUsable(hasCPU bool, request func() error, probe func() error) error {
	if !hasCPU {
		return errors.New("the CPU lacks AMX-TILE/INT8/BF16 or AVX-512 F/BW/VL/VNNI")
	}
	if err := request(); err != nil {
		return fmt.Errorf("the kernel refused the AMX tile state: %w", err)
	}
	if err := probe(); err != nil {
		return fmt.Errorf("AMX probe: %w", err)
	}
	return nil
}

func cpuHasAMX() bool {
	x := cpu.X86
	return x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI &&
		x.HasAMXTile && x.HasAMXInt8 && x.HasAMXBF16
}

// amxProbe runs a small product through every kind of tile kernel (Q8_0:
// TDPBSSD; the K-quants: TDPBSUD and TDPBSSD; BF16: TDPBF16PS), with
// integer-valued data whose results are exact, and compares each with the
// quant reference.
func amxProbe() error {
	const rows, b = 16, 17
	// Q8_0: signed weights and activations of both signs, d = D = 1.
	const nb8 = 2
	w8 := make([]byte, rows*nb8*quant.BlockQ8_0Size)
	for i := range w8 {
		w8[i] = byte(i*7 + 3)
	}
	for blk := 0; blk < rows*nb8; blk++ {
		w8[blk*quant.BlockQ8_0Size], w8[blk*quant.BlockQ8_0Size+1] = 0x00, 0x3C
	}
	a8 := make([]quant.BlockQ8_0, b*nb8)
	for i := range a8 {
		a8[i].D = 1
		for j := range a8[i].Qs {
			a8[i].Qs[j] = int8(i*5 + j*3 - 40)
		}
	}
	// Q4_K and Q6_K: patterned quants and scales, d = dmin = D = 1.
	ak := make([]quant.BlockQ8K, b)
	for i := range ak {
		ak[i].D = 1
		for j := range ak[i].Qs {
			ak[i].Qs[j] = int8((i*11+j*7)%255 - 127)
		}
		for g := range ak[i].Bsums {
			var s int16
			for _, q := range ak[i].Qs[16*g : 16*g+16] {
				s += int16(q)
			}
			ak[i].Bsums[g] = s
		}
	}
	w4 := make([]byte, rows*quant.BlockQ4_KSize)
	for i := range w4 {
		w4[i] = byte(i*13 + 5)
	}
	w6 := make([]byte, rows*quant.BlockQ6_KSize)
	for i := range w6 {
		w6[i] = byte(i*29 + 1)
	}
	for r := 0; r < rows; r++ {
		b4 := w4[r*quant.BlockQ4_KSize:]
		b4[0], b4[1], b4[2], b4[3] = 0x00, 0x3C, 0x00, 0x3C
		b6 := w6[r*quant.BlockQ6_KSize:]
		b6[208], b6[209] = 0x00, 0x3C
	}
	// BF16: small integers.
	const n = 64
	wb := make([]byte, 2*rows*n)
	for i := 0; i < rows*n; i++ {
		h := quant.FP32ToBF16(float32(i%17 - 8))
		wb[2*i], wb[2*i+1] = byte(h), byte(h>>8)
	}
	xb := make([]float32, b*n)
	for i := range xb {
		xb[i] = float32(i%13 - 6)
	}
	out := make([]float32, b*rows)
	check := func(name string, ref func(r, t int) float32) error {
		for t := 0; t < b; t++ {
			for r := 0; r < rows; r++ {
				if want := ref(r, t); out[t*rows+r] != want {
					return fmt.Errorf("%s token %d row %d: got %v, want %v", name, t, r, out[t*rows+r], want)
				}
			}
		}
		return nil
	}
	q80AMX(w8, rows, NewQ80Batch(a8, b), out, rows)
	if err := check("Q8_0", func(r, t int) float32 {
		rb := nb8 * quant.BlockQ8_0Size
		return quant.DotQ8_0(w8[r*rb:(r+1)*rb], a8[t*nb8:(t+1)*nb8])
	}); err != nil {
		return err
	}
	q4kAMX(w4, rows, NewQ8KBatch(ak, b), out, rows)
	if err := check("Q4_K", func(r, t int) float32 {
		return quant.DotQ4K(w4[r*quant.BlockQ4_KSize:(r+1)*quant.BlockQ4_KSize], ak[t:t+1])
	}); err != nil {
		return err
	}
	q6kAMX(w6, rows, NewQ8KBatch(ak, b), out, rows)
	if err := check("Q6_K", func(r, t int) float32 {
		return quant.DotQ6K(w6[r*quant.BlockQ6_KSize:(r+1)*quant.BlockQ6_KSize], ak[t:t+1])
	}); err != nil {
		return err
	}
	bf16AMX(wb, rows, NewBF16Batch(xb, b), out, rows)
	return check("BF16", func(r, t int) float32 {
		return quant.DotBF16(wb[2*r*n:2*(r+1)*n], xb[t*n:(t+1)*n])
	})
}

// amxLevel returns the AMX level built on the vector table below it, or
// the reason there is none.
func amxLevel(below table) (level, error) {
	if err := amxUsable(cpuHasAMX(), requestAMX, amxProbe); err != nil {
		return level{}, err
	}
	t := below
	t.q80mm = q80AMX
	t.q4kmm, t.q4kx8mm = q4kAMX, q4kx8AMX
	t.q5kmm = q5kAMX
	t.q6kmm, t.q6kx8mm = q6kAMX, q6kx8AMX
	t.bf16mm = bf16AMX
	t.halfMul, t.halfPack, t.halfSplit = halfMulAMX, halfPackAMX, halfSplitAVX512
	return level{name: "amx", tab: t, prefill: 512}, nil
}

// amxTok is where amxTileQ8K writes one token tile's block.
type amxTok struct {
	qs, da, bs unsafe.Pointer
}

//go:noescape
func amxTileQ8K(dst *amxTok, src *quant.BlockQ8K, stride, n int)

//go:noescape
func amxQK4(p *amxQKArgs)

//go:noescape
func amxQK6(p *amxQKArgs)

//go:noescape
func unpackQ4KAMX(dst, g0, g1 *byte)

//go:noescape
func unpackQ6KAMX(dst, g0, g1 *byte)

// amxSB is the size of one unpacked super-block of a 16-row K-quant tile:
// lo and hi planes (4 steps of 64 x 16 rows each), 8 c16 pairs, d, dmin.
const amxSB = 8832

// setQKCfg: tmm0 and tmm3 = the A tiles of two token tiles (tokens x 64
// quants), tmm1/tmm2 = the lo/hi B tiles (16 rows of 16 x 4 bytes),
// tmm4/tmm5 and tmm6/tmm7 = Clo/Chi (tokens x 16 int32) of the two token
// tiles.
func setQKCfg(c *tileCfg, ntok int) {
	c.rows[0], c.colsb[0] = uint8(ntok), 64
	c.rows[1], c.colsb[1] = 16, 64
	c.rows[2], c.colsb[2] = 16, 64
	c.rows[3], c.colsb[3] = uint8(ntok), 64
	for i := 4; i < 8; i++ {
		c.rows[i], c.colsb[i] = uint8(ntok), 64
	}
}

// qkTiles lays out what the K-quant tile kernels read of a batch of b
// tokens of nb blocks, super-block major so that the token tiles of one
// super-block lie side by side (the kernels take two at a time at fixed
// offsets). For token t, block blk, i = (blk*tiles + t/16)*16 + t%16:
//   - its quants in tile order, 64 at a time: quants 64*s.. at
//     qs[(i/16)*4096 + s*1024 + (t%16)*64:] (A tiles from whole aligned
//     lines: loaded in place, the 64 bytes of a token straddled two lines
//     of a block 292 bytes long, and the tile loads ran at half the rate);
//   - its scale at da[i];
//   - its sums of 32 quants at bs[8*i:] (the pairs of Bsums added: the
//     K-quants these kernels serve have one min per 32).
//
// All three live in one buffer (qkViews finds them); the missing tokens of
// a last partial tile get zeros. It is built once per Q8KBatch.
func qkTiles(dst []byte, a []quant.BlockQ8K, b int) []byte {
	nb := len(a) / b
	tiles := (b + 15) / 16
	dst = grow(dst, tiles*nb*(4096+64+256)+64)
	qs, da, bs := qkViews(dst, b, nb)
	if b%16 != 0 {
		clear(dst)
	}
	stride := nb * int(unsafe.Sizeof(a[0]))
	for blk := 0; blk < nb; blk++ {
		for tile := 0; tile < tiles; tile++ {
			i := (blk*tiles + tile) * 16
			d := amxTok{qs: unsafe.Pointer(&qs[i*256]), da: unsafe.Pointer(&da[i]), bs: unsafe.Pointer(&bs[8*i])}
			amxTileQ8K(&d, &a[tile*16*nb+blk], stride, min(16, b-16*tile))
		}
	}
	return dst
}

// qkViews returns the quants (64-byte aligned), scales and sums that
// qkTiles lays out in buf for b tokens of nb blocks.
func qkViews(buf []byte, b, nb int) (qs []byte, da []float32, bs []int16) {
	n := (b + 15) / 16 * nb * 16 // token places
	off := int((64 - uintptr(unsafe.Pointer(&buf[0]))&63) & 63)
	qs = buf[off : off+256*n]
	da = unsafe.Slice((*float32)(unsafe.Pointer(&buf[off+256*n])), n)
	bs = unsafe.Slice((*int16)(unsafe.Pointer(&buf[off+260*n])), 8*n)
	_ = buf[off+276*n-1]
	return qs, da, bs
}

// amxQKArgs is what amxQK4 / amxQK6 read (see amxk_amd64.s).
type amxQKArgs struct {
	cfg   unsafe.Pointer // *tileCfg
	a     unsafe.Pointer // the first token tile's quants of the super-block
	w     unsafe.Pointer // the unpacked super-block of the weight tile
	da    unsafe.Pointer // the first tile's token scales of the super-block
	bs    unsafe.Pointer // the first tile's token bsums of the super-block
	acc   unsafe.Pointer // the first tile's sums, 16 x 16 float32 per tile
	cbuf  unsafe.Pointer // 64-byte aligned accumulator scratch (4 KiB)
	tiles int            // token tiles (all with the configuration's rows)
}

// qkAccBytes bounds the K-quant sums a call keeps between super-blocks
// (acc in qkAMX): a quarter of the smallest L2 of an AMX core (2 MiB).
const qkAccBytes = 512 << 10

// qkAMX is the AMX gemmQ8K shared by the K-quants in both layouts: unpack
// reads super-block sb of the 16-row tile at row r0 into dst; mm is the
// tile kernel; rest computes leftover rows (fewer than 16) with the vector
// kernels. The source of super-block sb of the tile at row r0 is runs
// runs of size bytes, the first at w[r0*rb+sb*size], 16/runs rows apart
// (the two 8-row groups of an interleaved layout, the 16 rows of a plain
// one). Super-blocks are the outer loop: one unpacked super-block (8.8
// KiB) stays in L1 while every token tile of the batch goes past it, and
// the token tiles' sums wait in acc (1 KiB each) between super-blocks.
func qkAMX(w []byte, rows int, x *Q8KBatch, out []float32, ldo int,
	unpack func(s *amxScratch, dst []byte, r0, sb int), mm func(*amxQKArgs),
	rest func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int), rb, runs, size int) {
	a, b := x.a, x.b
	r16 := rows &^ 15
	if r16 == 0 {
		rest(w, rows, a, b, out, ldo)
		return
	}
	nb := len(a) / b
	s := amxPool.Get().(*amxScratch)
	defer amxPool.Put(s)
	tiles, full := (b+15)/16, b/16
	qs, da, bs := qkViews(x.layout(layoutAMXQK, qkTiles), b, nb)
	wsb := align64(&s.pk, amxSB)
	// The sums of a group of row tiles wait in acc (row tile, token tile,
	// 16 tokens x 16 rows) and are written out token by token when the
	// group is done, each token's rows of the group one contiguous run:
	// written row tile by row tile, every token's 64 bytes fell on another
	// line and page. A group's sums stay within qkAccBytes so that they are
	// cleared, added to and read back in L2: sums for every row tile of a
	// large call (2 MiB for 2048 rows of 256 tokens) went to memory and
	// back, and clearing and writing them out took 15 % of the product.
	rts := r16 / 16
	group := min(rts, max(1, qkAccBytes/(tiles*1024)))
	accb := align64(&s.accb, group*tiles*1024)
	p := amxQKArgs{cbuf: s.cbuf(), w: unsafe.Pointer(&wsb[0])}
	var acc []float32
	run := func(tile, n, sb, ntok int) {
		p.cfg = s.cfgFor(cfgQK, ntok, setQKCfg)
		p.tiles = n
		p.a = unsafe.Pointer(&qs[(sb*tiles+tile)*4096])
		p.da = unsafe.Pointer(&da[(sb*tiles+tile)*16])
		p.bs = unsafe.Pointer(&bs[(sb*tiles+tile)*128])
		p.acc = unsafe.Pointer(&acc[tile*256])
		mm(&p)
	}
	for g0 := 0; g0 < rts; g0 += group {
		n := min(group, rts-g0)
		accg := unsafe.Slice((*float32)(unsafe.Pointer(&accb[0])), n*tiles*256)
		clear(accg)
		for rt := g0; rt < g0+n; rt++ {
			acc = accg[(rt-g0)*tiles*256:]
			for sb := 0; sb < nb; sb++ {
				unpack(s, wsb, 16*rt, sb)
				if sb+1 < nb {
					prefetchSource(w, 16*rt*rb+(sb+1)*size, 16/runs*rb, runs, size)
				} else if rt+1 < rts {
					prefetchSource(w, 16*(rt+1)*rb, 16/runs*rb, runs, size)
				}
				if full > 0 {
					run(0, full, sb, 16)
				}
				if full < tiles {
					run(full, 1, sb, b-16*full)
				}
			}
		}
		storeTiles16(&out[16*g0], 4*ldo, &accg[0], b, n, tiles*1024)
	}
	if r16 < rows {
		rest(w[r16*rb:], rows-r16, a, b, out[r16:], ldo)
	}
}

func q4kx8AMX(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	rb := len(x.a) / x.b * quant.BlockQ4_KSize
	const gb = 8 * quant.BlockQ4_KSize
	qkAMX(w, rows, x, out, ldo, func(_ *amxScratch, dst []byte, r0, sb int) {
		unpackQ4KAMX(&dst[0], &w[r0*rb+sb*gb], &w[(r0+8)*rb+sb*gb])
	}, amxQK4, func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		matMulX8("MatMulQ4Kx8", w, rows, a, b, out, ldo, quant.BlockQ4_KSize, MatVecQ4Kx8, cur.q4kx84)
	}, rb, 2, gb)
}

func q6kx8AMX(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	rb := len(x.a) / x.b * quant.BlockQ6_KSize
	const gb = 8 * quant.BlockQ6_KSize
	qkAMX(w, rows, x, out, ldo, func(_ *amxScratch, dst []byte, r0, sb int) {
		unpackQ6KAMX(&dst[0], &w[r0*rb+sb*gb], &w[(r0+8)*rb+sb*gb])
	}, amxQK6, func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		matMulX8("MatMulQ6Kx8", w, rows, a, b, out, ldo, quant.BlockQ6_KSize, MatVecQ6Kx8, cur.q6kx84)
	}, rb, 2, gb)
}

// The plain layouts interleave each super-block of the tile's two 8-row
// groups into the scratch first (the repack of one block), then unpack it
// like the x8 layout.
func q4kAMX(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	rb := len(x.a) / x.b * quant.BlockQ4_KSize
	const bs, gb = quant.BlockQ4_KSize, 8 * quant.BlockQ4_KSize
	qkAMX(w, rows, x, out, ldo, func(s *amxScratch, dst []byte, r0, sb int) {
		g := s.groups(2 * gb)
		pack16Q4K(g, w[r0*rb+sb*bs:], rb, &s.planes)
		unpackQ4KAMX(&dst[0], &g[0], &g[gb])
	}, amxQK4, func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		matMul("MatMulQ4K", w, rows, a, b, out, ldo, quant.BlockQ4_KSize, MatVecQ4K, cur.q4k4)
	}, rb, 16, bs)
}

func q6kAMX(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	rb := len(x.a) / x.b * quant.BlockQ6_KSize
	const bs, gb = quant.BlockQ6_KSize, 8 * quant.BlockQ6_KSize
	qkAMX(w, rows, x, out, ldo, func(s *amxScratch, dst []byte, r0, sb int) {
		g := s.groups(2 * gb)
		pack16Q6K(g, w[r0*rb+sb*bs:], rb, &s.planes)
		unpackQ6KAMX(&dst[0], &g[0], &g[gb])
	}, amxQK6, func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		matMul("MatMulQ6K", w, rows, a, b, out, ldo, quant.BlockQ6_KSize, MatVecQ6K, cur.q6k4)
	}, rb, 16, bs)
}

// align64 returns n bytes of *buf starting at a 64-byte boundary, growing
// the buffer as needed: tile loads of whole cache lines run about twice as
// fast as loads of rows that straddle two.
func align64(buf *[]byte, n int) []byte {
	*buf = grow(*buf, n+64)
	off := int((64 - uintptr(unsafe.Pointer(&(*buf)[0]))&63) & 63)
	return (*buf)[off : off+n]
}

// outBuf returns n floats of scratch for a call's sums, token-major with
// the rows of the call side by side, so tile stores stay in L2 instead of
// touching a new line of the output for every token of every row tile.
func (s *amxScratch) outBuf(n int) []float32 {
	s.ob = grow(s.ob, n)
	return s.ob
}

// flushOut copies the sums of outBuf (b tokens of r16 rows) to out, whose
// token stride is ldo.
func flushOut(out []float32, ldo int, ob []float32, b, r16 int) {
	for t := 0; t < b; t++ {
		copy(out[t*ldo:t*ldo+r16], ob[t*r16:(t+1)*r16])
	}
}

// groups returns n bytes of scratch for interleaving plain blocks.
func (s *amxScratch) groups(n int) []byte {
	s.grp = grow(s.grp, n)
	return s.grp
}

//go:noescape
func packQ80AMX(pk *byte, ws *float32, src *byte, rb, nb int)

//go:noescape
func transposeD16(dst0, dst1 *byte, step int, src *byte, rb int)

//go:noescape
func transposeB16(planes *byte, src *byte, rb int)

// pack16Q4K interleaves super-block 0 of 16 plain Q4_K rows (row r at
// src[r*rb:]) into the two x8 group blocks g[:1152] (rows 0-7) and
// g[1152:] (rows 8-15), exactly as packGroupQ4K does, with the transposes
// in assembly.
func pack16Q4K(g, src []byte, rb int, planes *[256]byte) {
	const gb = 8 * quant.BlockQ4_KSize
	_ = src[15*rb+quant.BlockQ4_KSize-1]
	g0, g1 := g[:gb], g[gb:2*gb]
	headQ4K(g0, g1, src, rb, planes)
	for p := 0; p < 4; p++ {
		transposeD16(&g0[128+256*p], &g1[128+256*p], 32, &src[16+32*p], rb)
	}
}

// headQ4K interleaves the 16-byte heads (d, dmin, 12 scale bytes) of 16
// plain Q4_K or Q5_K blocks (row r at src[r*rb:]) into the group blocks g0
// (rows 0-7) and g1 (rows 8-15).
func headQ4K(g0, g1, src []byte, rb int, planes *[256]byte) {
	transposeB16(&planes[0], &src[0], rb)
	for r := 0; r < 8; r++ {
		g0[2*r], g0[2*r+1], g0[16+2*r], g0[17+2*r] = planes[r], planes[16+r], planes[32+r], planes[48+r]
		g1[2*r], g1[2*r+1], g1[16+2*r], g1[17+2*r] = planes[8+r], planes[24+r], planes[40+r], planes[56+r]
	}
	for k := 0; k < 12; k++ {
		copy(g0[32+8*k:40+8*k], planes[16*(4+k):])
		copy(g1[32+8*k:40+8*k], planes[16*(4+k)+8:])
	}
}

// pack16Q6K is pack16Q4K for Q6_K (packGroupQ6K's layout).
func pack16Q6K(g, src []byte, rb int, planes *[256]byte) {
	const gb = 8 * quant.BlockQ6_KSize
	_ = src[15*rb+quant.BlockQ6_KSize-1]
	g0, g1 := g[:gb], g[gb:2*gb]
	transposeB16(&planes[0], &src[194], rb) // bytes 208, 209 (d) are planes 14, 15
	for r := 0; r < 8; r++ {
		g0[2*r], g0[2*r+1] = planes[16*14+r], planes[16*15+r]
		g1[2*r], g1[2*r+1] = planes[16*14+8+r], planes[16*15+8+r]
	}
	transposeB16(&planes[0], &src[192], rb) // the 16 scales
	for k := 0; k < 16; k++ {
		copy(g0[16+8*k:24+8*k], planes[16*k:])
		copy(g1[16+8*k:24+8*k], planes[16*k+8:])
	}
	for c := 0; c < 4; c++ {
		o := 144 + 768*(c/2) + 32*(c%2)
		transposeD16(&g0[o], &g1[o], 96, &src[32*c], rb)
	}
	for n := 0; n < 2; n++ {
		o := 144 + 768*n + 64
		transposeD16(&g0[o], &g1[o], 96, &src[128+32*n], rb)
	}
}

//go:noescape
func amxBF16(p *amxArgs)

// packTileBF16 lays out 32 bf16s of each of 16 rows (row r at src[r*rb:])
// as a B tile of TDPBF16PS at t (1 KiB): tile row p holds elements 2p and
// 2p+1 of each of the 16 rows, side by side.
func packTileBF16(t, src []byte, rb int) {
	transposeD16(&t[0], &t[32], 64, &src[0], rb)
	transposeD16(&t[512], &t[544], 64, &src[32], rb)
}

//go:noescape
func amxBF16x2(p *amxArgs)

//go:noescape
func toBF16(dst *uint16, src *float32, n int)

// bf16TokenBlock is the tokens that share one transposition of a row tile
// of n32 halves: as many as 1 MiB of bf16 activations holds (they stay in
// L2 while every row tile passes by), at least 64, in pairs of tiles. On a
// 2-core Sapphire-Rapids-class VM: 64 tokens ~200 GMAC/s, all 256 of a batch
// of 6656-wide rows at once 50 (3.4 MiB: beyond L2); at K = 2048, 128 and
// 256 tokens (0.5 and 1 MiB) ran at 1.1-2.3x 64 tokens' rate
// (BenchmarkGemm/amx/BF16/b=256, 2026-12-02), transposing each row tile
// 2 or 1 times instead of 4.
func bf16TokenBlock(n32 int) int {
	return max(64, (1<<20)/(2*n32)&^31)
}

// setBF16Cfg: tmm0 = A (tokens x 32 bf16), tmm1 = B (16 pairs x 16 rows),
// tmm2 = C (tokens x 16 f32).
func setBF16Cfg(c *tileCfg, ntok int) {
	c.rows[0], c.colsb[0] = uint8(ntok), 64
	c.rows[1], c.colsb[1] = 16, 64
	c.rows[2], c.colsb[2] = uint8(ntok), 64
	if ntok == 16 { // amxBF16x2: A1, B0, B1 and four accumulators
		for i := 1; i < 8; i++ {
			c.rows[i], c.colsb[i] = 16, 64
		}
	}
}

// bf16AMX is the AMX gemmFloat for BF16 weights: activations (already
// rounded to bf16, as for every BF16 product) are narrowed to bf16 once,
// each 16-row tile is transposed into B tiles of 32 bf16 once, and every
// token tile accumulates over all of K in one tile. AMX flushes subnormal
// bf16 inputs to zero, where the reference keeps them; weights and
// activations that small do not occur in models.
func bf16AMX(w []byte, rows int, xb *BF16Batch, out []float32, ldo int) {
	x, b := xb.x, xb.b
	n := len(x) / b
	rb := 2 * n
	r16 := rows &^ 15
	if r16 == 0 {
		matMulFloat("MatMulBF16", w, rows, x, b, out, ldo, 2, MatVecBF16, cur.bf164)
		return
	}
	n32 := (n + 31) &^ 31
	nc := n32 / 32
	s := amxPool.Get().(*amxScratch)
	defer amxPool.Put(s)
	xn := bf16Tiles(xb.get(layoutAMXBF, func(dst []byte) []byte { return narrowBF16(dst, x, b) }), b, n32)
	pk := align64(&s.pk, 1024*nc)
	ob := s.outBuf(b * r16)
	p := amxArgs{astride: 2 * n32, nb: nc, ldo: 4 * r16}
	full := n / 32 // chunks whose 64 bytes lie inside every row
	var tail [16 * 64]byte
	pack := func(bt []byte, src []byte) {
		for c := 0; c < full; c++ {
			t := bt[1024*c:]
			packTileBF16(t, src[64*c:], rb)
		}
		if full < nc {
			clear(tail[:])
			for r := 0; r < 16; r++ {
				copy(tail[64*r:64*r+rb-64*full], src[r*rb+64*full:(r+1)*rb])
			}
			t := bt[1024*full:]
			packTileBF16(t, tail[:], 64)
		}
	}
	pk1 := align64(&s.grp, 1024*nc)
	// Token blocks of bf16TokenBlock keep a block's activations in L2 while
	// every row tile of the matrix passes by; a row tile is transposed once
	// per block. Pairs of row tiles and of full token tiles go through the
	// 2x2 kernel, the rest one tile pair at a time.
	tblock := bf16TokenBlock(n32)
	for tb := 0; tb < b; tb += tblock {
		te := min(b, tb+tblock)
		for r0 := 0; r0 < r16; r0 += 32 {
			pack(pk, w[r0*rb:])
			two := r0+16 < r16
			if two {
				pack(pk1, w[(r0+16)*rb:])
			}
			t0 := tb
			if two {
				for ; t0+32 <= te; t0 += 32 {
					p.cfg = s.cfgFor(cfgBF16, 16, setBF16Cfg)
					p.a = unsafe.Pointer(&xn[t0*n32])
					p.w, p.ws = unsafe.Pointer(&pk[0]), unsafe.Pointer(&pk1[0])
					p.out = unsafe.Pointer(&ob[t0*r16+r0])
					amxBF16x2(&p)
				}
			}
			for ; t0 < te; t0 += 16 {
				p.ntok = min(16, te-t0)
				p.cfg = s.cfgFor(cfgBF16, p.ntok, setBF16Cfg)
				p.a = unsafe.Pointer(&xn[t0*n32])
				for j, bt := range [][]byte{pk, pk1} {
					if j == 1 && !two {
						break
					}
					p.w = unsafe.Pointer(&bt[0])
					p.out = unsafe.Pointer(&ob[t0*r16+r0+16*j])
					amxBF16(&p)
				}
			}
		}
	}
	flushOut(out, ldo, ob, b, r16)
	if r16 < rows {
		matMulFloat("MatMulBF16", w[r16*rb:], rows-r16, x, b, out[r16:], ldo, 2, MatVecBF16, cur.bf164)
	}
}

// narrowBF16 lays out b rows of bf16 values (held as float32) for the
// BF16 tile kernel: each row narrowed to its upper 16 bits and padded with
// zeros to a multiple of 32, n32 halves a row (bf16Tiles views it).
func narrowBF16(dst []byte, x []float32, b int) []byte {
	n := len(x) / b
	n32 := (n + 31) &^ 31
	dst = grow(dst, 2*b*n32+64)
	xb := bf16Tiles(dst, b, n32)
	n16 := n &^ 15
	for t := 0; t < b; t++ {
		row := xb[t*n32 : (t+1)*n32]
		if n16 > 0 {
			toBF16(&row[0], &x[t*n], n16)
		}
		for i := n16; i < n; i++ {
			row[i] = uint16(math.Float32bits(x[t*n+i]) >> 16)
		}
		clear(row[n:])
	}
	return dst
}

// bf16Tiles returns the b rows of n32 halves that narrowBF16 lays out in
// buf, 64-byte aligned.
func bf16Tiles(buf []byte, b, n32 int) []uint16 {
	off := int((64 - uintptr(unsafe.Pointer(&buf[0]))&63) & 63)
	_ = buf[off+2*b*n32-1]
	return unsafe.Slice((*uint16)(unsafe.Pointer(&buf[off])), b*n32)
}

//go:noescape
func unpackQ5KAMX(dst, g0, g1, h0, h1 *byte)

// pack16Q5K lays out super-block 0 of 16 plain Q5_K rows for
// unpackQ5KAMX: d, dmin, scales and quants exactly as pack16Q4K would for
// a Q4_K block with the same fields (g[:2304]), and the qh bytes
// transposed like the quants, rows 0-7 at g[2304:2560], rows 8-15 at
// g[2560:2816].
func pack16Q5K(g, src []byte, rb int, planes *[256]byte) {
	const gb = 8 * quant.BlockQ4_KSize
	_ = src[15*rb+quant.BlockQ5_KSize-1]
	g0, g1 := g[:gb], g[gb:2*gb]
	headQ4K(g0, g1, src, rb, planes)
	for p := 0; p < 4; p++ {
		transposeD16(&g0[128+256*p], &g1[128+256*p], 32, &src[48+32*p], rb)
	}
	transposeD16(&g[2*gb], &g[2*gb+256], 32, &src[16], rb)
}

func q5kAMX(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
	rb := len(x.a) / x.b * quant.BlockQ5_KSize
	const bs, gb = quant.BlockQ5_KSize, 8 * quant.BlockQ4_KSize
	qkAMX(w, rows, x, out, ldo, func(s *amxScratch, dst []byte, r0, sb int) {
		g := s.groups(2*gb + 512)
		pack16Q5K(g, w[r0*rb+sb*bs:], rb, &s.planes)
		unpackQ5KAMX(&dst[0], &g[0], &g[gb], &g[2*gb], &g[2*gb+256])
	}, amxQK4, func(w []byte, rows int, a []quant.BlockQ8K, b int, out []float32, ldo int) {
		matMul("MatMulQ5K", w, rows, a, b, out, ldo, quant.BlockQ5_KSize, MatVecQ5K, nil)
	}, rb, 16, bs)
}

// prefetchSource asks for the runs of a weight tile's next super-block
// while this one's products run: read by the unpacker only after some
// microseconds of tile work, the two streams of 18 lines a super-block
// were not prefetched by the hardware, and the unpacking waited on memory
// (unpackQ4KAMX 5.1 % of a 2,017-token prefill's samples; 2.7 % with
// this, the prefetching 0.8 %).
func prefetchSource(w []byte, off, stride, runs, size int) {
	for i := range runs {
		prefetchLines(&w[off+i*stride], (size+63)/64+1)
	}
}

//go:noescape
func prefetchLines(p *byte, n int)

//go:noescape
func storeTiles16(dst *float32, ldo int, src *float32, n, tiles, step int)

//go:noescape
func amxOne(op int, c *int32, a, b *byte, cfg *tileCfg)

//go:noescape
func amxPeak(n int, bf16 bool, cfg *tileCfg)
