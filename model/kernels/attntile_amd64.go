//go:build !purego

package kernels

import "unsafe"

// amxHalfArgs is what amxHalfMul reads (amxattn_amd64.s).
type amxHalfArgs struct {
	cfg    unsafe.Pointer // *tileCfg
	ah     unsafe.Pointer // A hi, row 0 of the 32
	alo    int            // bytes from A hi to A lo
	lda    int            // bytes from one A row to the next
	bh     unsafe.Pointer // B hi tile of the first column tile and chunk
	blo    int            // bytes from B hi to B lo
	bstep  int            // bytes from one column tile to the next
	nc     int            // chunks of 32 along K
	out    unsafe.Pointer // out row 0 (column j0)
	ldo    int            // bytes from one out row to the next
	npairs int            // pairs of column tiles
	acc    int            // 1: add to out
}

//go:noescape
func amxHalfMul(p *amxHalfArgs)

//go:noescape
func splitF32BF16(hi, lo *uint16, src *float32, n int)

//go:noescape
func splitF16BF16(hi, lo *uint16, src *byte, n int)

// setHalfCfg: eight tiles of 16 rows of 64 bytes (two A row tiles, two B
// column tiles, four accumulators).
func setHalfCfg(c *tileCfg, _ int) {
	for i := range 8 {
		c.rows[i], c.colsb[i] = 16, 64
	}
}

// halfMulAMX is MulHalves on AMX: a's 32 rows split into hi and lo bf16
// rows (zeros from row m), then the 2x2-tile kernel over every pair of
// column tiles.
func halfMulAMX(a []float32, lda, m int, b *HalfTiles, j0, j1, k0, k1 int, out []float32, ldo int, acc bool) {
	s := amxPool.Get().(*amxScratch)
	defer amxPool.Put(s)
	kk := k1 - k0
	buf := align64(&s.pk, 4*32*kk)
	h := unsafe.Slice((*uint16)(unsafe.Pointer(&buf[0])), 64*kk)
	hi, lo := h[:32*kk], h[32*kk:]
	for i := range m {
		splitF32BF16(&hi[i*kk], &lo[i*kk], &a[i*lda], kk)
	}
	clear(hi[m*kk:])
	clear(lo[m*kk:])
	nc := b.k32 / 32
	tiles := b.buf[b.off:]
	p := amxHalfArgs{
		cfg: s.cfgFor(cfgHalf, 16, setHalfCfg),
		ah:  unsafe.Pointer(&hi[0]), alo: 2 * 32 * kk, lda: 2 * kk,
		bh: unsafe.Pointer(&tiles[(j0/16*nc+k0/32)*1024]), blo: 2 * b.n32 * b.k32, bstep: nc * 1024,
		nc:  kk / 32,
		out: unsafe.Pointer(&out[0]), ldo: 4 * ldo,
		npairs: (j1 - j0) / 32,
	}
	if acc {
		p.acc = 1
	}
	amxHalfMul(&p)
}

// halfPackAMX transposes the stage's hi then lo rows into B tiles of t
// from row r0 (packTileBF16): the tile of rows 16g.. and halves 32c.. at
// 1024*(g*k32/32+c) of a plane.
func halfPackAMX(t *HalfTiles, s *HalfStage, r0 int) {
	sm, tm := 2*s.n32*s.k32, 2*t.n32*t.k32 // bytes of a plane
	rb, nc := 2*s.k32, s.k32/32
	dst := t.buf[t.off:]
	for pl := 0; pl < 2; pl++ {
		src, d := s.buf[pl*sm:], dst[pl*tm+r0/16*nc*1024:]
		for g := 0; g < s.n32/16; g++ {
			for c := 0; c < nc; c++ {
				packTileBF16(d[(g*nc+c)*1024:], src[16*g*rb+64*c:], rb)
			}
		}
	}
}

func halfSplitAVX512(hi, lo []uint16, src []byte) {
	splitF16BF16(&hi[0], &lo[0], &src[0], len(hi))
}
