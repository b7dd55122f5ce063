//go:build !purego

#include "textflag.h"

// AVX-512 matrix-matrix kernel for BF16 weights (prefill). A tile of 32
// rows is first converted (bf16pack2Z) to float32 and transposed, element
// k of 16 rows in one zmm; then 8 tokens at a time, their activations
// transposed the same way (bf16xt8Z: element k of the 8 tokens in 32
// bytes), each token's element is broadcast once and multiplied into both
// 16-row halves: 16 FMAs for 2 weight and 8 broadcast loads, 16
// independent accumulators. bf16 -> f32 is exact, so the products are the
// reference's.
//
// VDPBF16PS would do two elements per instruction, but on this Sapphire
// Rapids class host it runs at half the multiply-add rate of VFMADD231PS
// (BenchmarkPeak: ~58 vs ~115 GMAC/s per core) and needs bf16 activations
// (truncating an unrounded x, which the f32 form uses as given, like the
// reference).

DATA bfhi<>+0(SB)/4, $0xffff0000
GLOBL bfhi<>(SB), RODATA|NOPTR, $4

// func bf16pack2Z(src *byte, idx *int32, n2 int, dst *float32)
//
// Converts and transposes a 32-row tile (row r at src + idx[r]): element
// k of rows 0-15 to dst[32k:], of rows 16-31 to dst[32k+16:], k < 2*n2.
TEXT ·bf16pack2Z(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ idx+8(FP), AX
	MOVQ n2+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU32 (AX), Z30
	VMOVDQU32 64(AX), Z31
	VPBROADCASTD bfhi<>(SB), Z29

bfpack2:
	KXNORW K0, K0, K1
	VPGATHERDD (SI)(Z30*1), K1, Z0
	KXNORW K0, K0, K2
	VPGATHERDD (SI)(Z31*1), K2, Z2
	VPSLLD $16, Z0, Z1
	VPANDD Z29, Z0, Z0
	VPSLLD $16, Z2, Z3
	VPANDD Z29, Z2, Z2
	VMOVUPS Z1, (DI)
	VMOVUPS Z3, 64(DI)
	VMOVUPS Z0, 128(DI)
	VMOVUPS Z2, 192(DI)
	ADDQ $4, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  bfpack2
	VZEROUPPER
	RET

// func bf16xt8Z(x *float32, idx *int32, n int, dst *float32)
//
// dst[8k+t] = x[idx[t]/4 + k] for k < n: 8 tokens' activations
// transposed, one gather per element k.
TEXT ·bf16xt8Z(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ idx+8(FP), AX
	MOVQ n+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU (AX), Y14

bfxt8:
	VPCMPEQD Y13, Y13, Y13
	VGATHERDPS Y13, (SI)(Y14*1), Y0
	VMOVUPS Y0, (DI)
	ADDQ $4, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  bfxt8
	VZEROUPPER
	RET

#define BF32K(OFF, XO) \
	VMOVUPS (OFF)(SI), Z16 \
	VMOVUPS (OFF+64)(SI), Z17 \
	VBROADCASTSS (XO)(AX), Z18 \
	VBROADCASTSS (XO+4)(AX), Z19 \
	VBROADCASTSS (XO+8)(AX), Z20 \
	VBROADCASTSS (XO+12)(AX), Z21 \
	VBROADCASTSS (XO+16)(AX), Z22 \
	VBROADCASTSS (XO+20)(AX), Z23 \
	VBROADCASTSS (XO+24)(AX), Z24 \
	VBROADCASTSS (XO+28)(AX), Z25 \
	VFMADD231PS Z18, Z16, Z0 \
	VFMADD231PS Z18, Z17, Z1 \
	VFMADD231PS Z19, Z16, Z2 \
	VFMADD231PS Z19, Z17, Z3 \
	VFMADD231PS Z20, Z16, Z4 \
	VFMADD231PS Z20, Z17, Z5 \
	VFMADD231PS Z21, Z16, Z6 \
	VFMADD231PS Z21, Z17, Z7 \
	VFMADD231PS Z22, Z16, Z8 \
	VFMADD231PS Z22, Z17, Z9 \
	VFMADD231PS Z23, Z16, Z10 \
	VFMADD231PS Z23, Z17, Z11 \
	VFMADD231PS Z24, Z16, Z12 \
	VFMADD231PS Z24, Z17, Z13 \
	VFMADD231PS Z25, Z16, Z14 \
	VFMADD231PS Z25, Z17, Z15

#define BF32OUT(A, B) \
	VMOVUPS A, (DI) \
	VMOVUPS B, 64(DI) \
	DECQ DX \
	JZ   bf32done \
	ADDQ R9, DI

// func bf16mm32AVX512(pk *float32, xt *float32, n2 int, ntok int, out *float32, ldo int)
//
// out[t*ldo/4 + r] = sum_k pk[32k+r] * xt[8k+t] for r < 32, t < ntok <= 8,
// k < 2*n2: each of the 8 tokens' elements broadcast once into a register
// for both 16-row halves.
TEXT ·bf16mm32AVX512(SB), NOSPLIT, $0-48
	MOVQ pk+0(FP), SI
	MOVQ xt+8(FP), AX
	MOVQ n2+16(FP), CX
	MOVQ ntok+24(FP), DX
	MOVQ out+32(FP), DI
	MOVQ ldo+40(FP), R9
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

bf32loop:
	BF32K(0, 0)
	BF32K(128, 32)
	ADDQ $256, SI
	ADDQ $64, AX
	DECQ CX
	JNZ  bf32loop

	BF32OUT(Z0, Z1)
	BF32OUT(Z2, Z3)
	BF32OUT(Z4, Z5)
	BF32OUT(Z6, Z7)
	BF32OUT(Z8, Z9)
	BF32OUT(Z10, Z11)
	BF32OUT(Z12, Z13)
	VMOVUPS Z14, (DI)
	VMOVUPS Z15, 64(DI)

bf32done:
	VZEROUPPER
	RET
