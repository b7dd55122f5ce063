//go:build !purego

#include "textflag.h"

// AVX-512 VNNI matrix-matrix kernel for Q8_0 (prefill). A tile of 16 rows
// is first packed (q80packZ) into the form the VNNI products want: per
// block, 8 zmm vectors whose dword r holds 4 consecutive weights of row r,
// biased by 128 (w ^ 0x80 = w + 128, unsigned as VPDPBUSD requires), and
// the 16 rows' scales as floats. Then every token runs 8 VPDPBUSD per
// block with its activation dwords as embedded broadcasts, starting from
// -128*sum(a) so the bias cancels exactly.

DATA q80x80<>+0(SB)/4, $0x80808080
GLOBL q80x80<>(SB), RODATA|NOPTR, $4

#define Q80G(k, R) \
	KXNORW K0, K0, K1 \
	VPGATHERDD (2+4*(k))(SI)(Z30*1), K1, R \
	VPXORD.BCST q80x80<>(SB), R, R \
	VMOVDQU64 R, (64*(k))(DI)

// func q80packZ(src *byte, idx *int32, nb int, dst *byte)
//
// Row r of the tile starts at src + idx[r]; block b is written to
// dst + 576*b (512 weight bytes, then 16 float scales).
TEXT ·q80packZ(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ idx+8(FP), AX
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU32 (AX), Z30

q80pack:
	Q80G(0, Z0)
	Q80G(1, Z1)
	Q80G(2, Z2)
	Q80G(3, Z3)
	Q80G(4, Z4)
	Q80G(5, Z5)
	Q80G(6, Z6)
	Q80G(7, Z7)
	KXNORW K0, K0, K1
	VPGATHERDD (SI)(Z30*1), K1, Z8
	VPMOVDW Z8, Y8
	VCVTPH2PS Y8, Z8
	VMOVUPS Z8, 512(DI)
	ADDQ $34, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  q80pack
	VZEROUPPER
	RET

#define Q80W(k, R, S) \
	VMOVDQU64 (64*(k))(SI), R \
	VMOVDQU64 (576+64*(k))(SI), S

#define Q80DP(k, R, S) \
	VPDPBUSD.BCST (4+4*(k))(AX), R, Z18 \
	VPDPBUSD.BCST (40+4*(k))(AX), S, Z19

// func q80mmAVX512(p *q80mmArgs)
//
// q80mmArgs: pk 0, nb 8, a 16, astride 24, nc 32, ntok 40, out 48, ldo 56,
// fsum 64. Tokens' float sums live at fsum+64t.
TEXT ·q80mmAVX512(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ 0(R8), SI
	MOVQ 16(R8), DI
	MOVQ 24(R8), R9
	MOVQ 32(R8), R13
	MOVQ 8(R8), R11
	SHLQ $2, R11

	VPXORD Z0, Z0, Z0
	MOVQ 40(R8), CX
	MOVQ 64(R8), R10

q80zero:
	VMOVUPS Z0, (R10)
	ADDQ $64, R10
	DECQ CX
	JNZ  q80zero

	MOVQ 8(R8), DX
	SHRQ $1, DX
	JZ   q80odd

q80pair:
	Q80W(0, Z0, Z8)
	Q80W(1, Z1, Z9)
	Q80W(2, Z2, Z10)
	Q80W(3, Z3, Z11)
	Q80W(4, Z4, Z12)
	Q80W(5, Z5, Z13)
	Q80W(6, Z6, Z14)
	Q80W(7, Z7, Z15)
	VMOVUPS 512(SI), Z16
	VMOVUPS 1088(SI), Z17
	MOVQ DI, AX
	MOVQ 64(R8), R10
	MOVQ R13, R12
	MOVQ 40(R8), CX

q80tok:
	VPBROADCASTD 0(R12), Z18
	VPBROADCASTD 4(R12), Z19
	Q80DP(0, Z0, Z8)
	Q80DP(1, Z1, Z9)
	Q80DP(2, Z2, Z10)
	Q80DP(3, Z3, Z11)
	Q80DP(4, Z4, Z12)
	Q80DP(5, Z5, Z13)
	Q80DP(6, Z6, Z14)
	Q80DP(7, Z7, Z15)
	VCVTDQ2PS Z18, Z18
	VCVTDQ2PS Z19, Z19
	VMULPS.BCST 0(AX), Z16, Z20
	VMULPS.BCST 36(AX), Z17, Z21
	VMOVUPS (R10), Z22
	VFMADD231PS Z18, Z20, Z22
	VFMADD231PS Z19, Z21, Z22
	VMOVUPS Z22, (R10)
	ADDQ R9, AX
	ADDQ $64, R10
	ADDQ R11, R12
	DECQ CX
	JNZ  q80tok

	ADDQ $1152, SI
	ADDQ $72, DI
	ADDQ $8, R13
	DECQ DX
	JNZ  q80pair

q80odd:
	MOVQ 8(R8), DX
	ANDQ $1, DX
	JZ   q80store
	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VMOVDQU64 256(SI), Z4
	VMOVDQU64 320(SI), Z5
	VMOVDQU64 384(SI), Z6
	VMOVDQU64 448(SI), Z7
	VMOVUPS 512(SI), Z16
	MOVQ DI, AX
	MOVQ 64(R8), R10
	MOVQ R13, R12
	MOVQ 40(R8), CX

q80tok1:
	VPBROADCASTD 0(R12), Z18
	VPDPBUSD.BCST 4(AX), Z0, Z18
	VPDPBUSD.BCST 8(AX), Z1, Z18
	VPDPBUSD.BCST 12(AX), Z2, Z18
	VPDPBUSD.BCST 16(AX), Z3, Z18
	VPDPBUSD.BCST 20(AX), Z4, Z18
	VPDPBUSD.BCST 24(AX), Z5, Z18
	VPDPBUSD.BCST 28(AX), Z6, Z18
	VPDPBUSD.BCST 32(AX), Z7, Z18
	VCVTDQ2PS Z18, Z18
	VMULPS.BCST 0(AX), Z16, Z20
	VMOVUPS (R10), Z22
	VFMADD231PS Z18, Z20, Z22
	VMOVUPS Z22, (R10)
	ADDQ R9, AX
	ADDQ $64, R10
	ADDQ R11, R12
	DECQ CX
	JNZ  q80tok1

q80store:
	MOVQ 48(R8), AX
	MOVQ 56(R8), R9
	MOVQ 64(R8), R10
	MOVQ 40(R8), CX

q80out:
	VMOVUPS (R10), Z0
	VMOVUPS Z0, (AX)
	ADDQ R9, AX
	ADDQ $64, R10
	DECQ CX
	JNZ  q80out
	VZEROUPPER
	RET

// func q80NegSums(a *quant.BlockQ8_0, n int, out *int32)
//
// out[i] = -128 * the sum of a[i]'s 32 quants, the correction of the
// biased weights: (q ^ 0x80) sums unsigned with VPSADBW, less 32*128.
// AVX2 only: the avxvnni level's Q8_0 kernels need the same sums.
TEXT ·q80NegSums(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ out+16(FP), DI
	VPBROADCASTD q80x80<>(SB), Y15
	VPXOR Y14, Y14, Y14

q80sums:
	VMOVDQU 4(SI), Y0
	VPXOR Y15, Y0, Y0
	VPSADBW Y14, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVD X0, AX
	SHLL $7, AX
	MOVL $524288, BX
	SUBL AX, BX
	MOVL BX, (DI)
	ADDQ $36, SI
	ADDQ $4, DI
	DECQ CX
	JNZ  q80sums
	VZEROUPPER
	RET
