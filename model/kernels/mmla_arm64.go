//go:build !purego

package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/droidgo/droidgo/model/quant"
)

// The matrix-matrix kernels of the i8mm and dotprod levels. SMMLA
// multiplies a 2x8 int8 matrix by an 8x2 one into a 2x2 int32 one, so the
// assembly micro-kernels (mmla_arm64.s) work on tiles of 4 rows x 4 tokens as 2x2 SMMLA pairs. Go packs the
// operands into the order SMMLA wants: each 4-token quad of the batch once
// per call, and each 4-row quad of weights once, unpacked to int8 with its
// scales as int32 and float32 vectors, then reused for every token quad of
// the batch. The micro-kernels take the whole batch's token quads for one
// weight quad and store each 4x4 tile of results in place. Rows and tokens
// past the end are packed as zeros and their results dropped (written to a
// scratch tile), so any shape works. The dotprod level runs the same
// packed quads through SDOT kernels: two SDOTs (tokens as packed, and the
// token pair swapped) do the work of one SMMLA.
//
// Q4_0 weights go through the Q8_0 kernel (quants unpacked to -8..7) and
// Q5_K through the Q4_K one (quants 0..31).
//
// A packed chunk is 8 consecutive k of two rows (or tokens) side by side
// (16 bytes, one SMMLA operand); a chunk of a quad is its pair 0 then its
// pair 1 (mmChunk, 32 bytes). Per block, a weight quad holds:
//
//	Q8_0 (mmQ80W):  4 chunks; d as [d0 d0 d1 d1][d2 d2 d3 d3] (f32)
//	Q4_K (mmQ4KW):  per sub-block j < 8: 4 chunks, then its scales as
//	                [s0 s0 s1 s1][s2 s2 s3 s3] (int32); the mins as 2
//	                chunks of m[k/2] for the 16 bsums; d; -dmin
//	Q6_K (mmQ6KW):  per sub-block j < 16: 2 chunks of quants-32, scales;
//	                then d
//
// and an activation quad:
//
//	Q8_0 (mmQ80A):  4 chunks; D as [a0 a1 a0 a1][a2 a3 a2 a3]
//	Q8_K (mmQ8KA):  32 chunks; the bsums split as 16*hi + lo (hi =
//	                bsum>>4, lo = bsum&15, both int8) in 2 chunks each; D
//
// so every integer part is exact and the float part per block is the
// reference's (d*D)*isum - (dmin*D)*msum. The offsets are the constants of
// mmlayout_arm64.go, generated from asmgen/mmlayout.py, which the
// generators of the micro-kernels and of the assembly packers read too.

// i8mmTable adds the SMMLA matrix-matrix kernels to the dotprod level's
// table t: Q8_0, Q4_0, Q4_K, Q5_K and Q6_K (the plain and the interleaved
// K-quant layouts share them: both are unpacked to the same packed quads),
// and where FEAT_BF16 is present the BF16 ones of bf16Table.

func i8mmTable(t table) table {
	return bf16Table(mmTable(t, mmKernels{q80: q80MMLA, q4k: q4kMMLA, q6k: q6kMMLA, q808: q80MMLA8}))
}

// bf16MM is the BF16 matrix-matrix product with BFMMLA (FEAT_BF16, present
// on every i8mm core so far): chunks of 4 k of 2 rows (or tokens) side by
// side, zero-padded past the row's end. Like the AMX kernel it takes x as
// bf16 (its upper 16 bits), which is exact for the quant.RoundBF16-rounded
// activations MatMulBF16 asks for. BFMMLA itself may flush subnormal
// inputs and rounds its sums its own way; the tests hold it to the
// reference's tolerance, and exactly on small integers.
//
// The operands are packed in assembly (bf16PackA, bf16PackW in
// x8pack_arm64.s: whole token quads 16 k at a time, whole row quads 8 k at
// a time) and the rest by the Go packers bf16ActsGo and bf16QuadGo, which
// are the tests' reference for the whole of both.
//
// The packed activations are built once per batch (layoutQuadsBF16), not
// once per row chunk of every product.
func bf16MM(w []byte, rows int, xb *BF16Batch, out []float32, ldo int) {
	x, b := xb.x, xb.b
	n := len(x) / b
	nc := (n + 3) / 4
	acts := xb.get(layoutQuadsBF16, func(dst []byte) []byte {
		dst = grow(dst, (b+3)/4*nc*mmChunk)
		bf16Acts(dst, x, b, n, nc)
		return dst
	})
	rb := 2 * n
	mmla(rows, b, nc, mmChunk, mmChunk, acts, out, ldo, bf16MMLA, nil, func(dst []byte, r0, nr int) {
		bf16Quad(dst, w, r0, nr, rb, nc)
	})
}

// bf16Acts writes the packed activation quads of the b tokens of x (n
// values each, nc chunks per quad) to dst, every byte of it.
func bf16Acts(dst []byte, x []float32, b, n, nc int) {
	ng := n / 16
	if ng > 0 {
		for tq := 0; tq < b/4; tq++ {
			bf16PackA(&dst[tq*nc*mmChunk], &x[4*tq*n], n, ng)
		}
	}
	bf16ActsGo(dst, x, b, n, nc, b/4, 16*ng)
}

// bf16ActsGo packs k >= k0 (a multiple of 4) of the first whole token
// quads and every k of the others, zero-padded; with whole = 0 it is the
// whole packing, the reference of bf16Acts. Each value is its upper 16 bits.
func bf16ActsGo(dst []byte, x []float32, b, n, nc, whole, k0 int) {
	for tq := 0; tq < (b+3)/4; tq++ {
		k := 0
		if tq < whole {
			k = k0
		}
		q := dst[tq*nc*mmChunk : (tq+1)*nc*mmChunk]
		clear(q[k/4*mmChunk:])
		for t := 4 * tq; t < min(b, 4*tq+4); t++ {
			base := chunkPos(t & 3)
			for j, v := range x[t*n+k : (t+1)*n] {
				kk := k + j
				binary.LittleEndian.PutUint16(q[base+(kk>>2)*mmChunk+2*(kk&3):], uint16(math.Float32bits(v)>>16))
			}
		}
	}
}

// bf16Quad writes the packed weight quad of rows r0..r0+nr-1 (rb bytes
// each, nc chunks) to dst, every byte of it: whole quads' first 16-byte
// pieces in assembly, the rest in Go.
func bf16Quad(dst, w []byte, r0, nr, rb, nc int) {
	c0 := 0
	if np := rb / 16; nr == 4 && np > 0 {
		bf16PackW(&dst[0], &w[r0*rb], rb, np)
		c0 = 2 * np
	}
	bf16QuadGo(dst, w, r0, nr, rb, nc, c0)
}

// bf16QuadGo packs chunks c0..nc-1 of the weight quad (zero past the
// rows' end and for rows past nr); with c0 = 0 it is the reference of
// bf16Quad.
func bf16QuadGo(dst, w []byte, r0, nr, rb, nc, c0 int) {
	clear(dst[mmChunk*c0 : mmChunk*nc])
	for r := 0; r < nr; r++ {
		row := w[(r0+r)*rb : (r0+r+1)*rb]
		pos := chunkPos(r)
		for c := c0; c < nc; c++ { // 4 weights, 8 bytes, fewer at the end
			copy(dst[mmChunk*c+pos:mmChunk*c+pos+8], row[8*c:min(rb, 8*c+8)])
		}
	}
}

// dotprodMMTable adds the same matrix-matrix kernels with SDOT in place of
// SMMLA (two SDOTs, direct and with the token pair swapped, per SMMLA) over
// the same packed quads.
func dotprodMMTable(t table) table {
	return mmTable(t, mmKernels{q80: q80DOTmm, q4k: q4kDOTmm, q6k: q6kDOTmm})
}

// mmKernel multiplies the packed weight quad w (nb blocks) by the nq
// packed token quads at a, one after the other, and stores the 4x4 tile of
// token quad i at c[(4i+t)*ldc+r] for token t and row r.
type mmKernel func(w, a *byte, nb, nq int, c *float32, ldc int)

// mmKernels are the micro-kernels of one level. q808 is q80 on 8 rows
// (two weight quads, the second nb blocks after the first; tiles of 8 rows
// x 4 tokens, so each activation chunk loaded serves twice the SMMLAs),
// nil where the level has none.
type mmKernels struct {
	q80, q4k, q6k, q808 mmKernel
}

func mmTable(t table, k mmKernels) table {
	// chunk(blk, c) returns the 8 int8 weights k = 8c..8c+7 of a block.
	q80 := func(bs int, x8 bool, chunk func(blk []byte, c int) uint64) gemmQ80 {
		return func(w []byte, rows int, x *Q80Batch, out []float32, ldo int) {
			a, b := x.a, x.b
			nb := len(a) / b
			buf := packQ80Acts(a, b, nb)
			defer mmPool.Put(buf)
			mmla(rows, b, nb, mmQ80W, mmQ80A, *buf, out, ldo, k.q80, k.q808, func(dst []byte, r0, n int) {
				if x8 {
					x8Pack(q80x8Pack0, q80x8Pack1, dst, w, r0, nb*bs, nb)
					return
				}
				var tmp [quant.BlockQ8_0Size]byte
				for i := 0; i < nb; i++ {
					var d [4]float32
					o := dst[i*mmQ80W:]
					for r := 0; r < n; r++ {
						blk := kBlock(w, x8, r0+r, i, nb, bs, tmp[:], unpackQ80)
						d[r] = quant.FP16ToFP32(binary.LittleEndian.Uint16(blk))
						pos := chunkPos(r)
						for c := 0; c < 4; c++ {
							binary.LittleEndian.PutUint64(o[mmChunk*c+pos:], chunk(blk, c))
						}
					}
					putRowF32(o[mmQ80WD:], d)
				}
			})
		}
	}
	q80chunk := func(blk []byte, c int) uint64 { return binary.LittleEndian.Uint64(blk[2+8*c:]) }
	t.q80mm, t.q80x8mm = q80(quant.BlockQ8_0Size, false, q80chunk), q80(quant.BlockQ8_0Size, true, q80chunk)
	// Q4_0 is Q8_0 with the quants (q&15)-8 (k < 16) and (q>>4)-8.
	t.q40mm = q80(quant.BlockQ4_0Size, false, func(blk []byte, c int) uint64 {
		v := binary.LittleEndian.Uint64(blk[2+8*(c&1):])
		if c >= 2 {
			v >>= 4
		}
		v = v&lo4 ^ 0x0808080808080808 // v-8 for v >= 8; v+8 (bit 3 set) else
		t := v & 0x0808080808080808
		return v | t<<1 | t<<2 | t<<3 | t<<4 // ... which becomes v-8 mod 256
	})
	// Q5_K is Q4_K with a fifth bit (quants 0..31 still fit int8).
	q4k := func(x8, q5 bool) gemmQ8K {
		bs := quant.BlockQ4_KSize
		if q5 {
			bs = quant.BlockQ5_KSize
		}
		return func(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
			b, nb := x.b, len(x.a)/x.b
			mmla(rows, b, nb, mmQ4KW, mmQ8KA, x.quads(), out, ldo, k.q4k, nil, func(dst []byte, r0, n int) {
				if x8 {
					x8Pack(q4kx8Pack0, q4kx8Pack1, dst, w, r0, nb*bs, nb)
					return
				}
				var tmp [quant.BlockQ4_KSize]byte
				for i := 0; i < nb; i++ {
					var sc, m [4][8]int32
					var d, dmin [4]float32
					o := dst[i*mmQ4KW:]
					for r := 0; r < n; r++ {
						blk := kBlock(w, x8, r0+r, i, nb, bs, tmp[:], unpackQ4K)
						d[r] = quant.FP16ToFP32(binary.LittleEndian.Uint16(blk))
						dmin[r] = -quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[2:]))
						for j := 0; j < 8; j++ {
							s, mm := quant.ScaleMinK4(j, blk[4:16])
							sc[r][j], m[r][j] = int32(s), int32(mm)
						}
						qs, qh := blk[16:], []byte(nil)
						if q5 {
							qh, qs = blk[16:48], blk[48:]
						}
						pos := chunkPos(r)
						for j := 0; j < 8; j++ {
							for c := 0; c < 4; c++ {
								v := binary.LittleEndian.Uint64(qs[32*(j>>1)+8*c:]) >> (4 * (j & 1)) & lo4
								if q5 {
									v |= (binary.LittleEndian.Uint64(qh[8*c:]) >> j & 0x0101010101010101) << 4
								}
								binary.LittleEndian.PutUint64(o[mmQ4KWSub*j+mmChunk*c+pos:], v)
							}
						}
					}
					for j := 0; j < 8; j++ {
						putRowI32(o[mmQ4KWSub*j+mmQ4KWSubScales:], sc[0][j], sc[1][j], sc[2][j], sc[3][j])
					}
					var mk [4][16]int8 // m of the sub-block of each of the 16 bsums
					for r := range 4 {
						for k := range 16 {
							mk[r][k] = int8(m[r][k/2])
						}
					}
					putChunk(o[mmQ4KWMins:], mk[0][:], mk[1][:], mk[2][:], mk[3][:])
					putChunk(o[mmQ4KWMins+mmChunk:], mk[0][8:], mk[1][8:], mk[2][8:], mk[3][8:])
					putRowF32(o[mmQ4KWD:], d)
					putRowF32(o[mmQ4KWNegDmin:], dmin)
				}
			})
		}
	}
	q6k := func(x8 bool) gemmQ8K {
		return func(w []byte, rows int, x *Q8KBatch, out []float32, ldo int) {
			b, nb := x.b, len(x.a)/x.b
			mmla(rows, b, nb, mmQ6KW, mmQ8KA, x.quads(), out, ldo, k.q6k, nil, func(dst []byte, r0, n int) {
				if x8 {
					x8Pack(q6kx8Pack0, q6kx8Pack1, dst, w, r0, nb*quant.BlockQ6_KSize, nb)
					return
				}
				var tmp [quant.BlockQ6_KSize]byte
				for i := 0; i < nb; i++ {
					var sc [4][16]int32
					var d [4]float32
					o := dst[i*mmQ6KW:]
					for r := 0; r < n; r++ {
						blk := kBlock(w, x8, r0+r, i, nb, quant.BlockQ6_KSize, tmp[:], unpackQ6K)
						d[r] = quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[208:]))
						for s := range 16 {
							sc[r][s] = int32(int8(blk[192+s]))
						}
						ql, qh := blk[0:128], blk[128:192]
						pos := chunkPos(r)
						for k := 0; k < 256; k += 8 {
							// weight k: quarter m of half h, l within 32
							h, m, l := k>>7, k>>5&3, k&31
							v := binary.LittleEndian.Uint64(ql[64*h+32*(m&1)+l:]) >> (4 * (m >> 1)) & lo4
							v |= (binary.LittleEndian.Uint64(qh[32*h+l:]) >> (2 * m) & 0x0303030303030303) << 4
							v ^= 0x2020202020202020 // v-32 for v >= 32; v+32 (bit 5 set) else
							t := v & 0x2020202020202020
							v |= t<<1 | t<<2 // ... which becomes v-32 mod 256
							binary.LittleEndian.PutUint64(o[mmQ6KWSub*(k>>4)+mmChunk*(k>>3&1)+pos:], v)
						}
					}
					for s := 0; s < 16; s++ {
						putRowI32(o[mmQ6KWSub*s+mmQ6KWSubScales:], sc[0][s], sc[1][s], sc[2][s], sc[3][s])
					}
					putRowF32(o[mmQ6KWD:], d)
				}
			})
		}
	}
	t.q4kmm, t.q4kx8mm, t.q5kmm = q4k(false, false), q4k(true, false), q4k(false, true)
	t.q6kmm, t.q6kx8mm = q6k(false), q6k(true)
	return t
}

// lo4 masks the low nibble of each of 8 bytes.
const lo4 = 0x0F0F0F0F0F0F0F0F

// chunkPos is where row (or token) r of a quad goes in a packed chunk.
func chunkPos(r int) int { return 16*(r>>1) + 8*(r&1) }

// plainPackedInGo: the matrix-matrix kernels' weight quads come from Go
// code for the file layout and from the x8pack_arm64.s packers for the
// interleaved one (PlainBatchSlower).
const plainPackedInGo = true

// x8Pack packs the weight quad of rows r0..r0+3 of an interleaved matrix
// (rows of rb bytes, nb blocks) into dst with the assembly packer of its
// half of the 8-row group (x8pack_arm64.s): no Go code per weight, where the
// plain layout's packing costs more instructions than the kernel for short
// batches.
func x8Pack(pack0, pack1 func(dst, src *byte, nb int), dst, w []byte, r0, rb, nb int) {
	g := r0 / Interleave * Interleave
	src := w[g*rb : (g+Interleave)*rb]
	if r0%Interleave == 0 {
		pack0(&dst[0], &src[0], nb)
	} else {
		pack1(&dst[0], &src[0], nb)
	}
}

// kBlock returns block i of row r of a K-quant matrix of nb blocks per row:
// in place for the plain layout, unpacked into tmp for the interleaved one.
func kBlock(w []byte, x8 bool, r, i, nb, bs int, tmp []byte, unpack func(blk, gb []byte, r int)) []byte {
	if !x8 {
		return w[(r*nb+i)*bs : (r*nb+i+1)*bs]
	}
	g := r / Interleave * Interleave
	unpack(tmp, w[(g*nb+i*Interleave)*bs:(g*nb+(i+1)*Interleave)*bs], r)
	return tmp
}

// mmla runs the micro-kernel kern over every 4-row x 4-token tile, or
// kern8 (if not nil) over 8-row x 4-token ones while 8 rows are left: each
// weight quad is packed once (packW(dst, r0, n) for rows r0..r0+n-1, n <= 4)
// and multiplied with every packed activation quad of acts. Whole tiles go
// straight to out (out[t*ldo+r] for token t, row r; ldo >= rows); a tile
// with rows or tokens past the end goes to a scratch tile first.
func mmla(rows, b, nb, wBlock, aBlock int, acts []byte, out []float32, ldo int, kern, kern8 mmKernel, packW func(dst []byte, r0, n int)) {
	if rows <= 0 || b <= 0 {
		return
	}
	_ = out[(b-1)*ldo+rows-1] // the kernels' stores stay below this
	qb := nb * wBlock         // bytes of a packed weight quad
	wq := getBuf(2 * qb)
	defer mmPool.Put(wq)
	whole := b / 4 // token quads without padding
	var c [16]float32
	// rest multiplies the weight quad w of rows r0..r0+nr-1 by the token
	// quads from t0 on, through the scratch tile.
	rest := func(w []byte, r0, nr, t0 int) {
		for ; t0 < b; t0 += 4 {
			kern(&w[0], &acts[t0/4*nb*aBlock], nb, 1, &c[0], 4)
			for t := range min(4, b-t0) {
				copy(out[(t0+t)*ldo+r0:(t0+t)*ldo+r0+nr], c[4*t:4*t+nr])
			}
		}
	}
	for r0 := 0; r0 < rows; {
		if kern8 != nil && rows-r0 >= 8 {
			packW((*wq)[:qb], r0, 4)
			packW((*wq)[qb:], r0+4, 4)
			if whole > 0 {
				kern8(&(*wq)[0], &acts[0], nb, whole, &out[r0], ldo)
			}
			rest((*wq)[:qb], r0, 4, 4*whole)
			rest((*wq)[qb:], r0+4, 4, 4*whole)
			r0 += 8
			continue
		}
		nr := min(4, rows-r0)
		if nr < 4 {
			clear((*wq)[:qb])
		}
		packW((*wq)[:qb], r0, nr)
		t0 := 0
		if nr == 4 && whole > 0 {
			kern(&(*wq)[0], &acts[0], nb, whole, &out[r0], ldo)
			t0 = 4 * whole
		}
		rest((*wq)[:qb], r0, nr, t0)
		r0 += 4
	}
}

// packQ80Acts packs the b tokens of nb Q8_0 blocks each into quads.
func packQ80Acts(a []quant.BlockQ8_0, b, nb int) *[]byte {
	nq := (b + 3) / 4
	buf := getBuf(nq * nb * mmQ80A)
	// Whole quads in assembly (the Go loop below cost ~10 % of a Q8_0
	// prefill: each worker packs the batch once per chunk of rows).
	for tq := 0; tq < b/4; tq++ {
		q80ActQuad(&(*buf)[tq*nb*mmQ80A], &a[4*tq*nb], nb*int(unsafe.Sizeof(a[0])), nb)
	}
	if b%4 == 0 {
		return buf
	}
	clear((*buf)[b/4*nb*mmQ80A:])
	for tq := b / 4; tq < nq; tq++ {
		for i := 0; i < nb; i++ {
			o := (*buf)[(tq*nb+i)*mmQ80A:]
			var q [4][]int8
			var d [4]float32
			for t := range 4 {
				q[t] = zeros[:]
				if tok := 4*tq + t; tok < b {
					blk := &a[tok*nb+i]
					q[t], d[t] = blk.Qs[:], blk.D
				}
			}
			for c := 0; c < 4; c++ {
				putChunk(o[mmChunk*c:], q[0][8*c:], q[1][8*c:], q[2][8*c:], q[3][8*c:])
			}
			putColF32(o[mmQ80AD:], d)
		}
	}
	return buf
}

// quads returns the batch packed in token quads for the K-quant
// micro-kernels (packQ8KActs), built once per batch: packed per call, every
// row chunk of every product packed the batch again (the Go loop was 7.8 %
// of a Q4_K_M prefill on the proxy before the assembly packer).
func (x *Q8KBatch) quads() []byte {
	return x.layout(layoutQuads, func(dst []byte, a []quant.BlockQ8K, b int) []byte {
		return packQ8KActs(dst, a, b, len(a)/b)
	})
}

// packQ8KActs packs the b tokens of nb Q8_K blocks each into quads in buf
// (grown as needed): whole quads in assembly (q8kActQuad), a last partial
// quad here, padded with zero tokens.
func packQ8KActs(buf []byte, a []quant.BlockQ8K, b, nb int) []byte {
	nq := (b + 3) / 4
	buf = grow(buf, nq*nb*mmQ8KA)
	for tq := 0; tq < b/4; tq++ {
		q8kActQuad(&buf[tq*nb*mmQ8KA], &a[4*tq*nb], nb*int(unsafe.Sizeof(a[0])), nb)
	}
	if b%4 == 0 {
		return buf
	}
	clear(buf[b/4*nb*mmQ8KA:])
	for tq := b / 4; tq < nq; tq++ {
		for i := 0; i < nb; i++ {
			o := buf[(tq*nb+i)*mmQ8KA:]
			var q [4][]int8
			var hi, lo [4][16]int8
			var d [4]float32
			for t := range 4 {
				q[t] = zeros[:]
				if tok := 4*tq + t; tok < b {
					blk := &a[tok*nb+i]
					q[t], d[t] = blk.Qs[:], blk.D
					for k, s := range blk.Bsums {
						hi[t][k], lo[t][k] = int8(s>>4), int8(s&15)
					}
				}
			}
			for c := 0; c < 32; c++ {
				putChunk(o[mmChunk*c:], q[0][8*c:], q[1][8*c:], q[2][8*c:], q[3][8*c:])
			}
			for c := 0; c < 2; c++ {
				putChunk(o[mmQ8KABsumHi+mmChunk*c:], hi[0][8*c:], hi[1][8*c:], hi[2][8*c:], hi[3][8*c:])
				putChunk(o[mmQ8KABsumLo+mmChunk*c:], lo[0][8*c:], lo[1][8*c:], lo[2][8*c:], lo[3][8*c:])
			}
			putColF32(o[mmQ8KAD:], d)
		}
	}
	return buf
}

var zeros [quant.QK_K]int8

// putChunk writes one packed chunk: 8 values of x0 then x1 (pair 0), of x2
// then x3 (pair 1).
func putChunk(dst []byte, x0, x1, x2, x3 []int8) {
	for k, x := range [4][]int8{x0, x1, x2, x3} {
		copy(dst[8*k:8*k+8], unsafe.Slice((*byte)(unsafe.Pointer(&x[:8][0])), 8))
	}
}

// putRowF32 writes a weight quad's per-row floats as [v0 v0 v1 v1][v2 v2 v3 v3].
func putRowF32(dst []byte, v [4]float32) {
	for i, x := range [8]float32{v[0], v[0], v[1], v[1], v[2], v[2], v[3], v[3]} {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}

// putColF32 writes a token quad's per-token floats as [v0 v1 v0 v1][v2 v3 v2 v3].
func putColF32(dst []byte, v [4]float32) {
	for i, x := range [8]float32{v[0], v[1], v[0], v[1], v[2], v[3], v[2], v[3]} {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}

// putRowI32 is putRowF32 for int32 scales.
func putRowI32(dst []byte, v0, v1, v2, v3 int32) {
	for i, x := range [8]int32{v0, v0, v1, v1, v2, v2, v3, v3} {
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(x))
	}
}

// mmPool recycles the packing buffers (a prefill batch of 256 tokens packs
// about 1.2 KiB per token and 256 weights).
var mmPool sync.Pool

func getBuf(n int) *[]byte {
	if p, ok := mmPool.Get().(*[]byte); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n)
	return &b
}

// The micro-kernels (mmKernel): nq 4-row x 4-token tiles over nb blocks of
// the packed quads w and a, stored token-major at c with stride ldc.

//go:noescape
func q80MMLA(w, a *byte, nb, nq int, c *float32, ldc int)

//go:noescape
func q80MMLA8(w, a *byte, nb, nq int, c *float32, ldc int)

//go:noescape
func q4kMMLA(w, a *byte, nb, nq int, c *float32, ldc int)

//go:noescape
func q6kMMLA(w, a *byte, nb, nq int, c *float32, ldc int)

//go:noescape
func bf16MMLA(w, a *byte, nc, nq int, c *float32, ldc int)

//go:noescape
func q80DOTmm(w, a *byte, nb, nq int, c *float32, ldc int)

//go:noescape
func q4kDOTmm(w, a *byte, nb, nq int, c *float32, ldc int)

//go:noescape
func q6kDOTmm(w, a *byte, nb, nq int, c *float32, ldc int)

// The packers of x8pack_arm64.s: the weight quads of rows 0-3 (...0) or 4-7
// (...1) of the 8-row group at src, nb blocks.

//go:noescape
func q80ActQuad(dst *byte, a *quant.BlockQ8_0, stride, nb int)

//go:noescape
func q8kActQuad(dst *byte, a *quant.BlockQ8K, stride, nb int)

//go:noescape
func q80x8Pack0(dst, src *byte, nb int)

//go:noescape
func q80x8Pack1(dst, src *byte, nb int)

//go:noescape
func q4kx8Pack0(dst, src *byte, nb int)

//go:noescape
func q4kx8Pack1(dst, src *byte, nb int)

//go:noescape
func q6kx8Pack0(dst, src *byte, nb int)

//go:noescape
func q6kx8Pack1(dst, src *byte, nb int)

// The BF16 packers of x8pack_arm64.s (bf16Acts, bf16Quad): 16*ng k of the
// 4 tokens at x, n apart; the first 2*np chunks of the 4 rows at w, rb
// bytes apart.

//go:noescape
func bf16PackA(dst *byte, x *float32, n, ng int)

//go:noescape
func bf16PackW(dst, w *byte, rb, np int)
