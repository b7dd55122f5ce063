//go:build !purego

#include "textflag.h"

// Kernels for the interleaved Q4_K layout (repack.go): 8 rows per group,
// each 32-byte weight load holding 4 consecutive quants of every row.

// x8sc: after VPBROADCASTQ of 8 row scales (bytes), turns them into the
// 16-bit words [s_r, s_r] of row r's two product words (rows 0-3 in the low
// lane, 4-7 in the high lane).
DATA x8sc<>+0(SB)/8, $0x8001800180008000
DATA x8sc<>+8(SB)/8, $0x8003800380028002
DATA x8sc<>+16(SB)/8, $0x8005800580048004
DATA x8sc<>+24(SB)/8, $0x8007800780068006
GLOBL x8sc<>(SB), RODATA|NOPTR, $32

// x8il interleaves two 8-byte halves: [a0 b0 a1 b1 ... a7 b7].
DATA x8il<>+0(SB)/8, $0x0b030a0209010800
DATA x8il<>+8(SB)/8, $0x0f070e060d050c04
GLOBL x8il<>(SB), RODATA|NOPTR, $16

DATA x8b0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL x8b0f<>(SB), RODATA|NOPTR, $4
DATA x8b3f<>+0(SB)/4, $0x3f3f3f3f
GLOBL x8b3f<>(SB), RODATA|NOPTR, $4
DATA x8b30<>+0(SB)/4, $0x30303030
GLOBL x8b30<>(SB), RODATA|NOPTR, $4

// Q4KX8_SCALES unpacks the 6-bit scales and mins of the group block at SI
// for all 8 rows and stores sc_j (row r at byte r) at 0+8j(SP) and m_j at
// 64+8j(SP). Uses Y0-Y8; Y15 = 0x0f bytes, Y9 = 0x3f, Y10 = 0x30.
//   sc0-3 = s0-3 & 63    sc4-7 = (s8-11 & 15) | (s0-3 >> 6) << 4
//   m0-3  = s4-7 & 63    m4-7  = (s8-11 >> 4) | (s4-7 >> 6) << 4
// (16-bit shifts move bits across bytes only where the masks clear them.)
#define Q4KX8_SCALES \
	VMOVDQU 32(SI), Y0 \
	VMOVDQU 64(SI), Y1 \
	VMOVDQU 96(SI), Y2 \
	VPAND Y9, Y0, Y4 \
	VPAND Y9, Y1, Y5 \
	VPSRLW $2, Y0, Y6 \
	VPAND Y10, Y6, Y6 \
	VPAND Y15, Y2, Y7 \
	VPOR Y6, Y7, Y7 \
	VPSRLW $2, Y1, Y6 \
	VPAND Y10, Y6, Y6 \
	VPSRLW $4, Y2, Y8 \
	VPAND Y15, Y8, Y8 \
	VPOR Y6, Y8, Y8 \
	VMOVDQU Y4, 0(SP) \
	VMOVDQU Y7, 32(SP) \
	VMOVDQU Y5, 64(SP) \
	VMOVDQU Y8, 96(SP)

// Q4KX8_MINPAIR(p, BS): Y1 = m_2p[r]*bs_2p + m_2p+1[r]*bs_2p+1 per row,
// with the activation's sums of 32 (as 16-bit words) at BS(SP).
#define Q4KX8_MINPAIR(p, BS) \
	VMOVDQU (64+16*p)(SP), X1 \
	VPSHUFB x8il<>(SB), X1, X1 \
	VPMOVZXBW X1, Y1 \
	VPBROADCASTD (BS+4*p)(SP), Y2 \
	VPMADDWD Y2, Y1, Y1

// Q4KX8_STEP(p, i): the 64 products of step i of chunk p for 8 rows,
// summed as 16-bit words into Y4 (sub-block 2p) and Y5 (sub-block 2p+1).
#define Q4KX8_STEP(p, i) \
	VMOVDQU (128+256*p+32*i)(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y15, Y0, Y0 \
	VPAND Y15, Y1, Y1 \
	VPBROADCASTD (4+64*p+4*i)(DI), Y2 \
	VPBROADCASTD (36+64*p+4*i)(DI), Y3 \
	VPMADDUBSW Y2, Y0, Y0 \
	VPMADDUBSW Y3, Y1, Y1 \
	VPADDW Y0, Y4, Y4 \
	VPADDW Y1, Y5, Y5

#define Q4KX8_STEP0(p) \
	VMOVDQU (128+256*p)(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y15, Y0, Y0 \
	VPAND Y15, Y1, Y1 \
	VPBROADCASTD (4+64*p)(DI), Y2 \
	VPBROADCASTD (36+64*p)(DI), Y3 \
	VPMADDUBSW Y2, Y0, Y4 \
	VPMADDUBSW Y3, Y1, Y5

// Q4KX8_CHUNK(p): Y12 (+)= the scaled sums of sub-blocks 2p and 2p+1. The
// 16-bit sums of a sub-block (8 steps x 2 products of 15 x 128 at most)
// cannot overflow.
#define Q4KX8_CHUNK(p) \
	Q4KX8_STEP0(p) \
	Q4KX8_STEP(p, 1) \
	Q4KX8_STEP(p, 2) \
	Q4KX8_STEP(p, 3) \
	Q4KX8_STEP(p, 4) \
	Q4KX8_STEP(p, 5) \
	Q4KX8_STEP(p, 6) \
	Q4KX8_STEP(p, 7) \
	VPBROADCASTQ (16*p)(SP), Y6 \
	VPSHUFB Y14, Y6, Y6 \
	VPMADDWD Y6, Y4, Y4 \
	VPBROADCASTQ (16*p+8)(SP), Y7 \
	VPSHUFB Y14, Y7, Y7 \
	VPMADDWD Y7, Y5, Y5 \
	VPADDD Y4, Y5, Y4

// func q4kx8AVX2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)
//
// Frame: 0-63 scales, 64-127 mins, 128-143 activation pair sums.
TEXT ·q4kx8AVX2(SB), NOSPLIT, $160-40
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ groups+24(FP), DX
	MOVQ out+32(FP), R8
	VPBROADCASTD x8b0f<>(SB), Y15
	VMOVDQU x8sc<>(SB), Y14
	VPBROADCASTD x8b3f<>(SB), Y9
	VPBROADCASTD x8b30<>(SB), Y10

x8group:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y13, Y13, Y13

x8block:
	Q4KX8_SCALES

	// Mins times the activation sums of 32: Y11 = sum_j m_j * bs_j.
	VMOVDQU 260(DI), Y0
	VEXTRACTI128 $1, Y0, X1
	VPHADDW X1, X0, X0
	VMOVDQU X0, 128(SP)
	Q4KX8_MINPAIR(0, 128)
	VMOVDQA Y1, Y11
	Q4KX8_MINPAIR(1, 128)
	VPADDD Y1, Y11, Y11
	Q4KX8_MINPAIR(2, 128)
	VPADDD Y1, Y11, Y11
	Q4KX8_MINPAIR(3, 128)
	VPADDD Y1, Y11, Y11

	Q4KX8_CHUNK(0)
	VMOVDQA Y4, Y12
	Q4KX8_CHUNK(1)
	VPADDD Y4, Y12, Y12
	Q4KX8_CHUNK(2)
	VPADDD Y4, Y12, Y12
	Q4KX8_CHUNK(3)
	VPADDD Y4, Y12, Y12

	// out += d*D*isum - dmin*D*msum, 8 rows at once.
	VBROADCASTSS 0(DI), Y1
	VCVTPH2PS 0(SI), Y0
	VMULPS Y1, Y0, Y0
	VCVTDQ2PS Y12, Y12
	VFMADD231PS Y12, Y0, Y13
	VCVTPH2PS 16(SI), Y2
	VMULPS Y1, Y2, Y2
	VCVTDQ2PS Y11, Y11
	VFNMADD231PS Y11, Y2, Y13

	ADDQ $1152, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  x8block

	VMOVUPS Y13, (R8)
	ADDQ $32, R8
	DECQ DX
	JNZ  x8group
	VZEROUPPER
	RET
