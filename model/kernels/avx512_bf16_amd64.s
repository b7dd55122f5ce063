//go:build !purego

#include "textflag.h"

// AVX-512 matrix-matrix kernel for BF16 weights (prefill). A tile of 16
// rows is first converted (bf16packZ) to float32 and transposed, element k
// of the 16 rows in one zmm; then 16 tokens at a time, their activations
// transposed the same way (element k of the 16 tokens in 64 bytes), run one
// VFMADD231PS per token and element with the activation as an embedded
// broadcast, 16 independent accumulators (Z0-Z15, one per token) of 16 rows
// each. bf16 -> f32 is exact, so the products are the reference's.
//
// VDPBF16PS would do two elements per instruction, but on this Sapphire
// Rapids host it runs at half the rate of VFMADD231PS (BenchmarkPeak: ~59
// vs ~115 GMAC/s per core) and needs bf16 activations (truncating an
// unrounded x, which the f32 form uses as given, like the reference).

DATA bfhi<>+0(SB)/4, $0xffff0000
GLOBL bfhi<>(SB), RODATA|NOPTR, $4

// func bf16packZ(src *byte, idx *int32, n2 int, dst *float32)
//
// Row r of the tile starts at src + idx[r]; element k of the 16 rows goes
// to dst[16k:16k+16], for k < 2*n2.
TEXT ·bf16packZ(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ idx+8(FP), AX
	MOVQ n2+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU32 (AX), Z30
	VPBROADCASTD bfhi<>(SB), Z29

bfpack:
	KXNORW K0, K0, K1
	VPGATHERDD (SI)(Z30*1), K1, Z0
	VPSLLD $16, Z0, Z1
	VPANDD Z29, Z0, Z0
	VMOVUPS Z1, (DI)
	VMOVUPS Z0, 64(DI)
	ADDQ $4, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  bfpack
	VZEROUPPER
	RET

#define BFFMA(k, W) \
	VFMADD231PS.BCST (64*(k)+0)(AX), W, Z0 \
	VFMADD231PS.BCST (64*(k)+4)(AX), W, Z1 \
	VFMADD231PS.BCST (64*(k)+8)(AX), W, Z2 \
	VFMADD231PS.BCST (64*(k)+12)(AX), W, Z3 \
	VFMADD231PS.BCST (64*(k)+16)(AX), W, Z4 \
	VFMADD231PS.BCST (64*(k)+20)(AX), W, Z5 \
	VFMADD231PS.BCST (64*(k)+24)(AX), W, Z6 \
	VFMADD231PS.BCST (64*(k)+28)(AX), W, Z7 \
	VFMADD231PS.BCST (64*(k)+32)(AX), W, Z8 \
	VFMADD231PS.BCST (64*(k)+36)(AX), W, Z9 \
	VFMADD231PS.BCST (64*(k)+40)(AX), W, Z10 \
	VFMADD231PS.BCST (64*(k)+44)(AX), W, Z11 \
	VFMADD231PS.BCST (64*(k)+48)(AX), W, Z12 \
	VFMADD231PS.BCST (64*(k)+52)(AX), W, Z13 \
	VFMADD231PS.BCST (64*(k)+56)(AX), W, Z14 \
	VFMADD231PS.BCST (64*(k)+60)(AX), W, Z15

#define BFOUT(R) \
	VMOVUPS R, (DI) \
	DECQ DX \
	JZ   bfdone \
	ADDQ R9, DI

// func bf16mmAVX512(pk *float32, xt *float32, n2 int, ntok int, out *float32, ldo int)
//
// out[t*ldo/4 + r] = sum_k pk[16k+r] * xt[16k+t] for r < 16, t < ntok,
// k < 2*n2; ldo in bytes.
TEXT ·bf16mmAVX512(SB), NOSPLIT, $0-48
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

bfloop:
	VMOVUPS (SI), Z16
	VMOVUPS 64(SI), Z17
	BFFMA(0, Z16)
	BFFMA(1, Z17)
	ADDQ $128, SI
	ADDQ $128, AX
	DECQ CX
	JNZ  bfloop

	BFOUT(Z0)
	BFOUT(Z1)
	BFOUT(Z2)
	BFOUT(Z3)
	BFOUT(Z4)
	BFOUT(Z5)
	BFOUT(Z6)
	BFOUT(Z7)
	BFOUT(Z8)
	BFOUT(Z9)
	BFOUT(Z10)
	BFOUT(Z11)
	BFOUT(Z12)
	BFOUT(Z13)
	BFOUT(Z14)
	VMOVUPS Z15, (DI)

bfdone:
	VZEROUPPER
	RET

// func bf16xtZ(x *float32, idx *int32, n int, dst *float32)
//
// dst[16k+t] = x[idx[t]/4 + k] for k < n: 16 tokens' activations
// transposed, one gather per element k.
TEXT ·bf16xtZ(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ idx+8(FP), AX
	MOVQ n+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU32 (AX), Z30

bfxt:
	KXNORW K0, K0, K1
	VGATHERDPS (SI)(Z30*1), K1, Z0
	VMOVUPS Z0, (DI)
	ADDQ $4, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  bfxt
	VZEROUPPER
	RET
