//go:build !purego

#include "textflag.h"

// BZSUM(za, zb, ...): one row's two accumulators za and zb (zb is
// clobbered) summed into lane 0 of xa, in the one order both kernels use.
#define BZSUM(za, zb, ya, yb, xa, xb) \
	VADDPS zb, za, za \
	VEXTRACTF64X4 $1, za, yb \
	VADDPS yb, ya, ya \
	VEXTRACTF128 $1, ya, xb \
	VADDPS xb, xa, xa \
	VMOVHLPS xa, xa, xb \
	VADDPS xb, xa, xa \
	VPSHUFD $1, xa, xb \
	VADDSS xb, xa, xa

// func bf16Zh2(w *byte, x *float32, n, half int, out *float32, pf int)
//
// The avx512 level's one-token BF16 product (decode), rows r and r+half
// together for r < half, n a multiple of 32: bf16AVX2h2 in zmm registers,
// with two accumulators per row and the weights prefetched pf bytes ahead
// (R12).
// The avx2 kernel keeps one chain of FMAs per row (its results must not
// depend on the kernel, as the avx2 level promises); this level makes no
// such promise. On Zen 5 (BenchmarkStreamRead/bf16, one thread from DRAM)
// the one-chain kernel read 18-22 GB/s, this one 25-30. bf16 -> f32 is
// exact (a 16-bit shift), so only the order of the sums differs from the
// reference.
TEXT ·bf16Zh2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R13
	MOVQ n+16(FP), R9
	MOVQ half+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ pf+40(FP), R12
	LEAQ 0(DX*4), R11
	MOVQ R9, R10
	IMULQ DX, R10
	SHLQ $1, R10 // bytes from row r to row r+half

bzrow:
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5

bzloop:
	PREFETCHT0 (SI)(R12*1)
	LEAQ (SI)(R10*1), AX
	PREFETCHT0 (AX)(R12*1)
	VPMOVZXWD (SI), Z8
	VPMOVZXWD 32(SI), Z9
	VPMOVZXWD (SI)(R10*1), Z10
	VPMOVZXWD 32(SI)(R10*1), Z11
	VPSLLD $16, Z8, Z8
	VPSLLD $16, Z9, Z9
	VPSLLD $16, Z10, Z10
	VPSLLD $16, Z11, Z11
	VMOVUPS (DI), Z12
	VMOVUPS 64(DI), Z13
	VFMADD231PS Z12, Z8, Z0
	VFMADD231PS Z13, Z9, Z1
	VFMADD231PS Z12, Z10, Z4
	VFMADD231PS Z13, Z11, Z5
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ  bzloop

	BZSUM(Z0, Z1, Y0, Y1, X0, X1)
	VMOVSS X0, (R8)
	BZSUM(Z4, Z5, Y4, Y5, X4, X5)
	VMOVSS X4, (R8)(R11*1)
	ADDQ $4, R8
	DECQ DX
	JNZ  bzrow
	VZEROUPPER
	RET

// func bf16Z1(w *byte, x *float32, n, rows int, out *float32)
//
// One row at a time with bf16Zh2's sums (two accumulators, the same
// reduction), for the odd row of a range: a row's result must not depend
// on the rows computed with it, since the threads cut the rows where they
// may.
TEXT ·bf16Z1(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R13
	MOVQ n+16(FP), R9
	MOVQ rows+24(FP), DX
	MOVQ out+32(FP), R8

b1row:
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1

b1loop:
	PREFETCHT0 4096(SI)
	VPMOVZXWD (SI), Z8
	VPMOVZXWD 32(SI), Z9
	VPSLLD $16, Z8, Z8
	VPSLLD $16, Z9, Z9
	VFMADD231PS (DI), Z8, Z0
	VFMADD231PS 64(DI), Z9, Z1
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ  b1loop

	BZSUM(Z0, Z1, Y0, Y1, X0, X1)
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ DX
	JNZ  b1row
	VZEROUPPER
	RET
