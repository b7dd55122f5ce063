//go:build !purego

#include "textflag.h"

// AVX-512 VNNI matrix-matrix kernel for the interleaved Q4_K layout
// (repack.go): 16 rows (two 8-row groups, one per 256-bit half of a zmm) x
// a tile of tokens. Per 64-weight chunk of a super-block the 16 weight
// vectors (8 steps x low/high nibbles, 4 weights of each of the 16 rows
// per dword) are unpacked once and regrouped by pairs of steps, as
// q4kx8VNNI does (VPUNPCKLDQ/VPUNPCKHDQ: per 128-bit lane, dwords [row r
// step 2k, row r step 2k+1] of rows 0,1 and of rows 2,3), into Z0-Z15; then
// every token of the tile, tokens in pairs, runs 16 VPDPBUSD against them,
// one VPBROADCASTQ of its activation dwords 2k, 2k+1 (a load, no shuffle)
// serving two. Each dword then sums 16 products (|sum| <= 16*15*128 <
// 2^15), so VPACKSSDW puts a row's even- and odd-step sums into adjacent
// words exactly, and one VPDPWSSD by the words [sc_r, sc_r] scales a
// sub-block and adds it to the token's integer sum: no VPMULLD (two p0
// micro-ops per 8 VPDPBUSD) and no separate add. The activations come from
// the batch's token tiles (Q8KBatch.tiles), where a chunk of every token of the
// tile is one stream.

DATA mm0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL mm0f<>(SB), RODATA|NOPTR, $4
DATA mm3f<>+0(SB)/4, $0x3f3f3f3f
GLOBL mm3f<>(SB), RODATA|NOPTR, $4
DATA mm30<>+0(SB)/4, $0x30303030
GLOBL mm30<>(SB), RODATA|NOPTR, $4

// mmqidx interleaves the qwords of the two groups: [g0 j0, g1 j0, g0 j1, ...].
DATA mmqidx<>+0(SB)/8, $0
DATA mmqidx<>+8(SB)/8, $4
DATA mmqidx<>+16(SB)/8, $1
DATA mmqidx<>+24(SB)/8, $5
DATA mmqidx<>+32(SB)/8, $2
DATA mmqidx<>+40(SB)/8, $6
DATA mmqidx<>+48(SB)/8, $3
DATA mmqidx<>+56(SB)/8, $7
GLOBL mmqidx<>(SB), RODATA|NOPTR, $64

// Q4MM_W(off, LOY, LO, HI): the 32 bytes at off of both groups, low
// nibbles into LO, high nibbles into HI.
#define Q4MM_W(off, LOY, LO, HI) \
	VMOVDQU off(SI), LOY \
	VINSERTI64X4 $1, off(SI)(BX*1), LO, LO \
	VPSRLW $4, LO, HI \
	VPANDD Z31, LO, LO \
	VPANDD Z31, HI, HI

// Q4MM_TOK(off, E, O, E2, O2, T, ACC): the token whose chunk is at
// off(AX). E and O sum the low nibbles' sub-block (rows 0,1 and rows 2,3 of
// each lane), E2 and O2 the high nibbles'; scaled by Z16 and Z17, they are
// added to the token's integer sum at off(R10).
#define Q4MM_TOK(off, E, O, E2, O2, T, ACC) \
	VPXORD E, E, E \
	VPXORD O, O, O \
	VPXORD E2, E2, E2 \
	VPXORD O2, O2, O2 \
	VPBROADCASTQ (off+0)(AX), T \
	VPDPBUSD T, Z0, E \
	VPDPBUSD T, Z1, O \
	VPBROADCASTQ (off+32)(AX), T \
	VPDPBUSD T, Z8, E2 \
	VPDPBUSD T, Z9, O2 \
	VPBROADCASTQ (off+8)(AX), T \
	VPDPBUSD T, Z2, E \
	VPDPBUSD T, Z3, O \
	VPBROADCASTQ (off+40)(AX), T \
	VPDPBUSD T, Z10, E2 \
	VPDPBUSD T, Z11, O2 \
	VPBROADCASTQ (off+16)(AX), T \
	VPDPBUSD T, Z4, E \
	VPDPBUSD T, Z5, O \
	VPBROADCASTQ (off+48)(AX), T \
	VPDPBUSD T, Z12, E2 \
	VPDPBUSD T, Z13, O2 \
	VPBROADCASTQ (off+24)(AX), T \
	VPDPBUSD T, Z6, E \
	VPDPBUSD T, Z7, O \
	VPBROADCASTQ (off+56)(AX), T \
	VPDPBUSD T, Z14, E2 \
	VPDPBUSD T, Z15, O2 \
	VPACKSSDW O, E, E \
	VPACKSSDW O2, E2, E2 \
	VMOVDQU32 (off)(R10), ACC \
	VPDPWSSD Z16, E, ACC \
	VPDPWSSD Z17, E2, ACC \
	VMOVDQU32 ACC, (off)(R10)

// Q4MM_MPAIR(p, R): R = the words [m_2p[r], m_2p+1[r]] of the 16 rows.
#define Q4MM_MPAIR(p, R) \
	VMOVDQU (128+32*(p))(R14), X0 \
	VMOVDQU (144+32*(p))(R14), X1 \
	VPUNPCKHBW X1, X0, X2 \
	VPUNPCKLBW X1, X0, X0 \
	VINSERTI128 $1, X2, Y0, Y0 \
	VPMOVZXBW Y0, R

// func q4kx8mmAVX512(p *x8mmArgs)
//
// Scratch (R14): 0-127 the scales sc_j of the 16 rows (16 bytes per j),
// 128-255 the mins, 256+64t the integer block sum of token t, 4352+64t its
// float sum.
TEXT ·q4kx8mmAVX512(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ 0(R8), SI
	MOVQ 8(R8), BX
	MOVQ 16(R8), DI
	MOVQ 24(R8), R9
	MOVQ 32(R8), R13
	MOVQ 72(R8), R14
	VPBROADCASTD mm0f<>(SB), Z31

	VPXORD Z0, Z0, Z0
	MOVQ 48(R8), CX
	LEAQ 256(R14), R10

mmzero:
	VMOVDQU32 Z0, (R10)
	VMOVDQU32 Z0, 4096(R10)
	ADDQ $64, R10
	DECQ CX
	JNZ  mmzero
	MOVQ 40(R8), DX

mmblock:
	// The 6-bit scales and mins of both groups (as in Q4KX8_SCALES), then
	// stored per sub-block j as 16 bytes (rows 0-15).
	VMOVDQU 32(SI), Y0
	VINSERTI64X4 $1, 32(SI)(BX*1), Z0, Z0
	VMOVDQU 64(SI), Y1
	VINSERTI64X4 $1, 64(SI)(BX*1), Z1, Z1
	VMOVDQU 96(SI), Y2
	VINSERTI64X4 $1, 96(SI)(BX*1), Z2, Z2
	VMOVDQU64 mmqidx<>(SB), Z9
	VPANDD.BCST mm3f<>(SB), Z0, Z4
	VPANDD.BCST mm3f<>(SB), Z1, Z5
	VPSRLW $2, Z0, Z6
	VPANDD.BCST mm30<>(SB), Z6, Z6
	VPANDD.BCST mm0f<>(SB), Z2, Z7
	VPORD Z6, Z7, Z7
	VPSRLW $2, Z1, Z6
	VPANDD.BCST mm30<>(SB), Z6, Z6
	VPSRLW $4, Z2, Z8
	VPANDD.BCST mm0f<>(SB), Z8, Z8
	VPORD Z6, Z8, Z8
	VPERMQ Z4, Z9, Z4
	VMOVDQU64 Z4, 0(R14)
	VPERMQ Z7, Z9, Z7
	VMOVDQU64 Z7, 64(R14)
	VPERMQ Z5, Z9, Z5
	VMOVDQU64 Z5, 128(R14)
	VPERMQ Z8, Z9, Z8
	VMOVDQU64 Z8, 192(R14)

	MOVQ $4, R12
	MOVQ R14, R11

mmchunk:
	VPBROADCASTD mm0f<>(SB), Z31
	Q4MM_W(128, Y0, Z0, Z8)
	Q4MM_W(160, Y1, Z1, Z9)
	Q4MM_W(192, Y2, Z2, Z10)
	Q4MM_W(224, Y3, Z3, Z11)
	Q4MM_W(256, Y4, Z4, Z12)
	Q4MM_W(288, Y5, Z5, Z13)
	Q4MM_W(320, Y6, Z6, Z14)
	Q4MM_W(352, Y7, Z7, Z15)
	VPUNPCKLDQ Z1, Z0, Z16
	VPUNPCKHDQ Z1, Z0, Z1
	VMOVDQA64 Z16, Z0
	VPUNPCKLDQ Z3, Z2, Z16
	VPUNPCKHDQ Z3, Z2, Z3
	VMOVDQA64 Z16, Z2
	VPUNPCKLDQ Z5, Z4, Z16
	VPUNPCKHDQ Z5, Z4, Z5
	VMOVDQA64 Z16, Z4
	VPUNPCKLDQ Z7, Z6, Z16
	VPUNPCKHDQ Z7, Z6, Z7
	VMOVDQA64 Z16, Z6
	VPUNPCKLDQ Z9, Z8, Z16
	VPUNPCKHDQ Z9, Z8, Z9
	VMOVDQA64 Z16, Z8
	VPUNPCKLDQ Z11, Z10, Z16
	VPUNPCKHDQ Z11, Z10, Z11
	VMOVDQA64 Z16, Z10
	VPUNPCKLDQ Z13, Z12, Z16
	VPUNPCKHDQ Z13, Z12, Z13
	VMOVDQA64 Z16, Z12
	VPUNPCKLDQ Z15, Z14, Z16
	VPUNPCKHDQ Z15, Z14, Z15
	VMOVDQA64 Z16, Z14
	VPMOVZXBD 0(R11), Z16
	VPSLLD $16, Z16, Z17
	VPORD Z17, Z16, Z16
	VPMOVZXBD 16(R11), Z17
	VPSLLD $16, Z17, Z18
	VPORD Z18, Z17, Z17
	MOVQ DI, AX
	LEAQ 256(R14), R10
	MOVQ 48(R8), CX
	SHRQ $1, CX
	JZ   mmtok1

mmtok2:
	Q4MM_TOK(0, Z18, Z19, Z20, Z21, Z22, Z23)
	Q4MM_TOK(64, Z24, Z25, Z26, Z27, Z28, Z29)
	ADDQ $128, AX
	ADDQ $128, R10
	DECQ CX
	JNZ  mmtok2

mmtok1:
	TESTQ $1, 48(R8)
	JZ    mmtoks
	Q4MM_TOK(0, Z18, Z19, Z20, Z21, Z22, Z23)

mmtoks:
	ADDQ $256, SI
	ADDQ R9, DI
	ADDQ $32, R11
	DECQ R12
	JNZ  mmchunk
	SUBQ $1024, SI

	// Per token: fsum = fsum - dmin*D*sum_j m_j*bs_j + d*D*isum; isum = 0.
	VMOVDQU 0(SI), X0
	VINSERTI128 $1, 0(SI)(BX*1), Y0, Y0
	VCVTPH2PS Y0, Z20
	VMOVDQU 16(SI), X0
	VINSERTI128 $1, 16(SI)(BX*1), Y0, Y0
	VCVTPH2PS Y0, Z21
	Q4MM_MPAIR(0, Z22)
	Q4MM_MPAIR(1, Z23)
	Q4MM_MPAIR(2, Z24)
	Q4MM_MPAIR(3, Z25)
	VPXORD Z1, Z1, Z1
	MOVQ DI, AX
	LEAQ 256(R14), R10
	MOVQ R13, R12
	MOVQ 40(R8), R11
	SHLQ $4, R11
	MOVQ 48(R8), CX

mmfin:
	VBROADCASTSS (AX), Z26
	VMULPS Z26, Z20, Z27
	VMULPS Z26, Z21, Z28
	VCVTDQ2PS (R10), Z29
	VPXORD Z30, Z30, Z30
	VPDPWSSD.BCST 0(R12), Z22, Z30
	VPDPWSSD.BCST 4(R12), Z23, Z30
	VPDPWSSD.BCST 8(R12), Z24, Z30
	VPDPWSSD.BCST 12(R12), Z25, Z30
	VCVTDQ2PS Z30, Z30
	// The mins first, as q4kx8AVX2 (the level's one-token kernel) does,
	// so a token's float sum does not depend on the kernel that made it.
	VMOVUPS 4096(R10), Z0
	VFNMADD231PS Z30, Z28, Z0
	VFMADD231PS Z29, Z27, Z0
	VMOVUPS Z0, 4096(R10)
	VMOVDQU32 Z1, (R10)
	ADDQ $4, AX
	ADDQ $64, R10
	ADDQ R11, R12
	DECQ CX
	JNZ  mmfin

	// The next block of the tile: past the nt scales and bsums.
	ADDQ $1152, SI
	MOVQ 48(R8), AX
	LEAQ (AX)(AX*8), AX
	LEAQ (DI)(AX*4), DI
	ADDQ $16, R13
	DECQ DX
	JNZ  mmblock

	MOVQ 56(R8), AX
	MOVQ 64(R8), R9
	LEAQ 4352(R14), R10
	MOVQ 48(R8), CX

mmstore:
	VMOVUPS (R10), Z0
	VMOVUPS Z0, (AX)
	ADDQ R9, AX
	ADDQ $64, R10
	DECQ CX
	JNZ  mmstore
	VZEROUPPER
	RET

// Q4PK(j): dword j of the 16 rows' qs (gathered), rows 0-7 to group 0's
// step slot j, rows 8-15 to group 1's (DX bytes on).
#define Q4PK(j) \
	KXNORW K0, K0, K1 \
	VPGATHERDD (16+4*(j))(SI)(Z30*1), K1, Z0 \
	VMOVDQU32 Y0, (128+32*(j))(DI) \
	VEXTRACTI64X4 $1, Z0, (128+32*(j))(DI)(DX*1)

// Q4PKSC(k, SH): scale byte k (byte SH/8 of the gathered dword in Z1) of
// the 16 rows to both groups' plane k.
#define Q4PKSC(k, SH) \
	VPSRLD $(SH), Z1, Z3 \
	VPMOVDB Z3, X3 \
	VMOVQ X3, (32+8*(k))(DI) \
	VPEXTRQ $1, X3, (32+8*(k))(DI)(DX*1)

#define Q4PKSC4(m) \
	KXNORW K0, K0, K1 \
	VPGATHERDD (4+4*(m))(SI)(Z30*1), K1, Z1 \
	Q4PKSC(4*(m), 0) \
	Q4PKSC(4*(m)+1, 8) \
	Q4PKSC(4*(m)+2, 16) \
	Q4PKSC(4*(m)+3, 24)

// func q4kPackZ(src *byte, idx *int32, nb int, dst *byte, gstride int)
//
// Interleaves 16 Q4_K rows (row r at src + idx[r], nb blocks) into the two
// group blocks of repack.go's layout, group 0 at dst and group 1 gstride
// bytes on: packGroupQ4K for both groups, with gathers.
TEXT ·q4kPackZ(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), SI
	MOVQ idx+8(FP), AX
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	MOVQ gstride+32(FP), DX
	VMOVDQU32 (AX), Z30

q4pk:
	KXNORW K0, K0, K1
	VPGATHERDD (SI)(Z30*1), K1, Z1
	VPMOVDW Z1, Y2
	VMOVDQU X2, 0(DI)
	VEXTRACTI128 $1, Y2, 0(DI)(DX*1)
	VPSRLD $16, Z1, Z1
	VPMOVDW Z1, Y2
	VMOVDQU X2, 16(DI)
	VEXTRACTI128 $1, Y2, 16(DI)(DX*1)
	Q4PKSC4(0)
	Q4PKSC4(1)
	Q4PKSC4(2)
	Q4PK(0)
	Q4PK(1)
	Q4PK(2)
	Q4PK(3)
	Q4PK(4)
	Q4PK(5)
	Q4PK(6)
	Q4PK(7)
	Q4PK(8)
	Q4PK(9)
	Q4PK(10)
	Q4PK(11)
	Q4PK(12)
	Q4PK(13)
	Q4PK(14)
	Q4PK(15)
	Q4PK(16)
	Q4PK(17)
	Q4PK(18)
	Q4PK(19)
	Q4PK(20)
	Q4PK(21)
	Q4PK(22)
	Q4PK(23)
	Q4PK(24)
	Q4PK(25)
	Q4PK(26)
	Q4PK(27)
	Q4PK(28)
	Q4PK(29)
	Q4PK(30)
	Q4PK(31)
	ADDQ $144, SI
	ADDQ $1152, DI
	DECQ CX
	JNZ  q4pk
	VZEROUPPER
	RET
