//go:build !purego

#include "textflag.h"

// Attention helpers: many rows of a strided matrix (the positions of one
// KV head in the cache) against one vector, in one call, so the per-call
// cost and the reloads of q or o are paid once per position range instead
// of once per position.

// HSUM(y, x, t): the sum of the 8 floats of y (whose low half is x) into
// the low float of t.
#define HSUM(y, x, t) VEXTRACTF128 $1, y, t; VADDPS x, t, t; VHADDPS t, t, t; VHADDPS t, t, t

// func dotRowsAVX2(q, k *float32, stride, n, d int, out *float32)
// out[j] = sum_i q[i]*k[j*stride+i] for j < n; d is a multiple of 8.
TEXT ·dotRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ stride+16(FP), R8
	SHLQ $2, R8              // stride in bytes
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), R9
	MOVQ out+40(FP), DX
	LEAQ (R8)(R8*2), R12     // 3*stride
rows4:
	CMPQ CX, $4
	JLT rows1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX
	MOVQ DI, R10
in4:
	VMOVUPS (SI)(AX*4), Y4
	VFMADD231PS (R10), Y4, Y0
	VFMADD231PS (R10)(R8*1), Y4, Y1
	VFMADD231PS (R10)(R8*2), Y4, Y2
	VFMADD231PS (R10)(R12*1), Y4, Y3
	ADDQ $32, R10
	ADDQ $8, AX
	CMPQ AX, R9
	JLT in4
	HSUM(Y0, X0, X5)
	HSUM(Y1, X1, X6)
	HSUM(Y2, X2, X7)
	HSUM(Y3, X3, X8)
	VMOVSS X5, (DX)
	VMOVSS X6, 4(DX)
	VMOVSS X7, 8(DX)
	VMOVSS X8, 12(DX)
	ADDQ $16, DX
	LEAQ (DI)(R8*4), DI
	SUBQ $4, CX
	JMP rows4
rows1:
	TESTQ CX, CX
	JZ done
	VXORPS Y0, Y0, Y0
	XORQ AX, AX
in1:
	VMOVUPS (SI)(AX*4), Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ $8, AX
	CMPQ AX, R9
	JLT in1
	HSUM(Y0, X0, X5)
	VMOVSS X5, (DX)
	ADDQ $4, DX
	ADDQ R8, DI
	DECQ CX
	JMP rows1
done:
	VZEROUPPER
	RET

// func axpyRowsAVX2(p, v *float32, stride, n, d int, o *float32)
// o[i] += sum_j p[j]*v[j*stride+i] for i < d (a multiple of 8), in slices
// of 64 floats held in 8 accumulators over all n rows.
TEXT ·axpyRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ stride+16(FP), R8
	SHLQ $2, R8
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), R9
	MOVQ o+40(FP), DX
	XORQ R11, R11            // float offset of the slice
slice:
	MOVQ R9, AX
	SUBQ R11, AX
	CMPQ AX, $64
	JLT narrow
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	VMOVUPS 128(DX), Y4
	VMOVUPS 160(DX), Y5
	VMOVUPS 192(DX), Y6
	VMOVUPS 224(DX), Y7
	LEAQ (DI)(R11*4), R10
	XORQ BX, BX
wide:
	VBROADCASTSS (SI)(BX*4), Y8
	VFMADD231PS (R10), Y8, Y0
	VFMADD231PS 32(R10), Y8, Y1
	VFMADD231PS 64(R10), Y8, Y2
	VFMADD231PS 96(R10), Y8, Y3
	VFMADD231PS 128(R10), Y8, Y4
	VFMADD231PS 160(R10), Y8, Y5
	VFMADD231PS 192(R10), Y8, Y6
	VFMADD231PS 224(R10), Y8, Y7
	ADDQ R8, R10
	INCQ BX
	CMPQ BX, CX
	JLT wide
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	ADDQ $256, DX
	ADDQ $64, R11
	JMP slice
narrow:
	CMPQ AX, $8
	JLT adone
	VMOVUPS (DX), Y0
	LEAQ (DI)(R11*4), R10
	XORQ BX, BX
nloop:
	VBROADCASTSS (SI)(BX*4), Y8
	VFMADD231PS (R10), Y8, Y0
	ADDQ R8, R10
	INCQ BX
	CMPQ BX, CX
	JLT nloop
	VMOVUPS Y0, (DX)
	ADDQ $32, DX
	ADDQ $8, R11
	JMP slice
adone:
	VZEROUPPER
	RET

// func roundF16AVX2(x *float32, n int): x[i] = float32(float16(x[i])),
// rounding to nearest even (VCVTPS2PH imm 0), 8 at a time; n is a multiple
// of 8.
TEXT ·roundF16AVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ rdone
rloop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ rloop
rdone:
	VZEROUPPER
	RET

// func q80BlocksAVX2(x *float32, y *quant.BlockQ8_0, n int): quant.QuantizeQ8_0
// of n blocks of 32, bit for bit: amax of |x|, id = 127/amax (0 for an
// all-zero block), D = amax/127 rounded to f16 and back, q = x*id rounded
// to nearest even (VCVTPS2DQ under Go's default MXCSR).
TEXT ·q80BlocksAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JZ qdone
	MOVL $0x7FFFFFFF, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x42FE0000, AX     // 127.0
	MOVQ AX, X14
	MOVQ $·q80Perm(SB), AX
	VMOVDQU (AX), Y13
qloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0x4E, X4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0xB1, X4, X5
	VMAXPS X5, X4, X4          // amax in every lane of X4
	VDIVSS X14, X4, X6         // d = amax / 127
	VCVTPS2PH $0, X6, X6
	VCVTPH2PS X6, X6
	VMOVSS X6, (DI)
	VXORPS X7, X7, X7
	VUCOMISS X7, X4
	JEQ zero
	VDIVSS X4, X14, X8         // id = 127 / amax
	VBROADCASTSS X8, Y8
	VMULPS Y8, Y0, Y0
	VMULPS Y8, Y1, Y1
	VMULPS Y8, Y2, Y2
	VMULPS Y8, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, 4(DI)
	JMP next
zero:
	VXORPS Y0, Y0, Y0
	VMOVDQU Y0, 4(DI)
next:
	ADDQ $128, SI
	ADDQ $36, DI
	DECQ CX
	JNZ qloop
qdone:
	VZEROUPPER
	RET

DATA ·q80Perm+0(SB)/4, $0
DATA ·q80Perm+4(SB)/4, $4
DATA ·q80Perm+8(SB)/4, $1
DATA ·q80Perm+12(SB)/4, $5
DATA ·q80Perm+16(SB)/4, $2
DATA ·q80Perm+20(SB)/4, $6
DATA ·q80Perm+24(SB)/4, $3
DATA ·q80Perm+28(SB)/4, $7
GLOBL ·q80Perm(SB), RODATA, $32

// func encodeF16AVX2(dst *byte, x *float32, n int): the IEEE halves of
// x[i] (VCVTPS2PH imm 0: nearest even, as quant.FP32ToFP16) to dst[2i:],
// 8 at a time; n is a multiple of 8.
TEXT ·encodeF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ edone
eloop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ eloop
edone:
	VZEROUPPER
	RET
