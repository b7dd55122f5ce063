//go:build !purego

#include "textflag.h"

// AVX-512 forms of the attention helpers (attn_amd64.s): 16 floats per
// instruction, and for axpyRows all of a 256-float head in 16 accumulators
// in one pass over the rows.

// HSUM16(z, y, x, t): the sum of the 16 floats of z (whose halves are y and
// x) into the low float of t.
#define HSUM16(z, y, x, t) VEXTRACTF64X4 $1, z, Y9; VADDPS y, Y9, Y9; VEXTRACTF128 $1, Y9, t; VADDPS X9, t, t; VHADDPS t, t, t; VHADDPS t, t, t

// func dotRows512(q, k *float32, stride, n, d int, out *float32)
// d is a multiple of 16.
TEXT ·dotRows512(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ stride+16(FP), R8
	SHLQ $2, R8
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), R9
	MOVQ out+40(FP), DX
	LEAQ (R8)(R8*2), R12
rows4:
	CMPQ CX, $4
	JLT rows1
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	XORQ AX, AX
	MOVQ DI, R10
in4:
	VMOVUPS (SI)(AX*4), Z4
	VFMADD231PS (R10), Z4, Z0
	VFMADD231PS (R10)(R8*1), Z4, Z1
	VFMADD231PS (R10)(R8*2), Z4, Z2
	VFMADD231PS (R10)(R12*1), Z4, Z3
	ADDQ $64, R10
	ADDQ $16, AX
	CMPQ AX, R9
	JLT in4
	HSUM16(Z0, Y0, X0, X5)
	HSUM16(Z1, Y1, X1, X6)
	HSUM16(Z2, Y2, X2, X7)
	HSUM16(Z3, Y3, X3, X8)
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
	VXORPS Z0, Z0, Z0
	XORQ AX, AX
in1:
	VMOVUPS (SI)(AX*4), Z4
	VFMADD231PS (DI)(AX*4), Z4, Z0
	ADDQ $16, AX
	CMPQ AX, R9
	JLT in1
	HSUM16(Z0, Y0, X0, X5)
	VMOVSS X5, (DX)
	ADDQ $4, DX
	ADDQ R8, DI
	DECQ CX
	JMP rows1
done:
	VZEROUPPER
	RET

// func axpyRows512(p, v *float32, stride, n, d int, o *float32)
// d is a multiple of 16; slices of up to 256 floats in 16 accumulators.
TEXT ·axpyRows512(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ stride+16(FP), R8
	SHLQ $2, R8
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), R9
	MOVQ o+40(FP), DX
	XORQ R11, R11
slice:
	MOVQ R9, AX
	SUBQ R11, AX
	CMPQ AX, $256
	JLT narrow
	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3
	VMOVUPS 256(DX), Z4
	VMOVUPS 320(DX), Z5
	VMOVUPS 384(DX), Z6
	VMOVUPS 448(DX), Z7
	VMOVUPS 512(DX), Z8
	VMOVUPS 576(DX), Z9
	VMOVUPS 640(DX), Z10
	VMOVUPS 704(DX), Z11
	VMOVUPS 768(DX), Z12
	VMOVUPS 832(DX), Z13
	VMOVUPS 896(DX), Z14
	VMOVUPS 960(DX), Z15
	LEAQ (DI)(R11*4), R10
	XORQ BX, BX
wide:
	VBROADCASTSS (SI)(BX*4), Z16
	VFMADD231PS (R10), Z16, Z0
	VFMADD231PS 64(R10), Z16, Z1
	VFMADD231PS 128(R10), Z16, Z2
	VFMADD231PS 192(R10), Z16, Z3
	VFMADD231PS 256(R10), Z16, Z4
	VFMADD231PS 320(R10), Z16, Z5
	VFMADD231PS 384(R10), Z16, Z6
	VFMADD231PS 448(R10), Z16, Z7
	VFMADD231PS 512(R10), Z16, Z8
	VFMADD231PS 576(R10), Z16, Z9
	VFMADD231PS 640(R10), Z16, Z10
	VFMADD231PS 704(R10), Z16, Z11
	VFMADD231PS 768(R10), Z16, Z12
	VFMADD231PS 832(R10), Z16, Z13
	VFMADD231PS 896(R10), Z16, Z14
	VFMADD231PS 960(R10), Z16, Z15
	ADDQ R8, R10
	INCQ BX
	CMPQ BX, CX
	JLT wide
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, 256(DX)
	VMOVUPS Z5, 320(DX)
	VMOVUPS Z6, 384(DX)
	VMOVUPS Z7, 448(DX)
	VMOVUPS Z8, 512(DX)
	VMOVUPS Z9, 576(DX)
	VMOVUPS Z10, 640(DX)
	VMOVUPS Z11, 704(DX)
	VMOVUPS Z12, 768(DX)
	VMOVUPS Z13, 832(DX)
	VMOVUPS Z14, 896(DX)
	VMOVUPS Z15, 960(DX)
	ADDQ $1024, DX
	ADDQ $256, R11
	JMP slice
narrow:
	CMPQ AX, $16
	JLT adone
	VMOVUPS (DX), Z0
	LEAQ (DI)(R11*4), R10
	XORQ BX, BX
nloop:
	VBROADCASTSS (SI)(BX*4), Z16
	VFMADD231PS (R10), Z16, Z0
	ADDQ R8, R10
	INCQ BX
	CMPQ BX, CX
	JLT nloop
	VMOVUPS Z0, (DX)
	ADDQ $64, DX
	ADDQ $16, R11
	JMP slice
adone:
	VZEROUPPER
	RET

// func storeTiles16(dst *float32, ldo int, src *float32, n, tiles, step int):
// for token t < n, row tile j < tiles: 16 floats from src + j*step + 64*t
// to dst + t*ldo + 64*j (bytes): the AMX sums of a call written token by
// token, each token's rows one contiguous run.
TEXT ·storeTiles16(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldo+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ tiles+32(FP), R8
	MOVQ step+40(FP), R9
	TESTQ CX, CX
	JZ tdone
	TESTQ R8, R8
	JZ tdone
ttok:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ R8, R12
trow:
	VMOVUPS (R10), Z0
	VMOVUPS Z0, (R11)
	ADDQ R9, R10
	ADDQ $64, R11
	DECQ R12
	JNZ trow
	ADDQ $64, SI
	ADDQ DX, DI
	DECQ CX
	JNZ ttok
tdone:
	VZEROUPPER
	RET
