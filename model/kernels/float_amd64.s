//go:build !purego

#include "textflag.h"
#include "floatavx2_amd64.h"

// Float matrix-vector kernels: 4 x 8 FMA accumulators per row over 32
// elements, then 8 at a time, then a scalar tail in its own register (a VEX
// scalar op would zero the upper half of a YMM accumulator). The weight
// loads are floatavx2_amd64.h's; bf16AVX2 keeps its shuffle mask in Y14.

#define HSUM_STORE \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X2 \
	VADDPS X2, X0, X0 \
	VMOVHLPS X0, X0, X2 \
	VADDPS X2, X0, X0 \
	VPSHUFD $1, X0, X2 \
	VADDSS X2, X0, X0 \
	VADDSS X8, X0, X0 \
	VMOVSS X0, (R8)

// f32AVX2 is float_amd64.h with f32 loads; the f16 and bf16 one-row kernels
// are float1_amd64.h (floatavx2_amd64.h's loads), which sums in the order of
// the two-stream and 4-token kernels.

// func f32AVX2(w *byte, x *float32, n, rows int, out *float32)
TEXT ·f32AVX2(SB), NOSPLIT, $0-40
#define WSIZE 4
#define WLOAD(m, y) VMOVUPS m, y
#define WSCAL(m, x) VMOVSS m, x
#define WINIT
#include "float_amd64.h"
#undef WSIZE
#undef WLOAD
#undef WSCAL
#undef WINIT

// func f16AVX2(w *byte, x *float32, n, rows int, out *float32)
TEXT ·f16AVX2(SB), NOSPLIT, $0-40
#define WLOAD(m, y) LOADW_F16(m, y)
#define WSCAL(m, x) SCALW_F16(m, x)
#define WINIT
#include "float1_amd64.h"
#undef WLOAD
#undef WSCAL
#undef WINIT

// func bf16AVX2(w *byte, x *float32, n, rows int, out *float32)
TEXT ·bf16AVX2(SB), NOSPLIT, $0-40
#define WLOAD(m, y) LOADW_BF16(m, y)
#define WSCAL(m, x) SCALW_BF16(m, x)
#define WINIT INITW_BF16
#include "float1_amd64.h"
#undef WLOAD
#undef WSCAL
#undef WINIT

// func axpyAVX2(alpha float32, x, y *float32, n int)
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), CX

axpy32:
	CMPQ CX, $32
	JB   axpy8
	VMOVUPS (SI), Y1
	VMOVUPS 32(SI), Y2
	VMOVUPS 64(SI), Y3
	VMOVUPS 96(SI), Y4
	VFMADD213PS (DI), Y0, Y1
	VFMADD213PS 32(DI), Y0, Y2
	VFMADD213PS 64(DI), Y0, Y3
	VFMADD213PS 96(DI), Y0, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  axpy32

axpy8:
	CMPQ CX, $8
	JB   axpytail
	VMOVUPS (SI), Y1
	VFMADD213PS (DI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  axpy8

axpytail:
	TESTQ CX, CX
	JZ    axpydone
	VMOVSS (SI), X1
	VFMADD213SS (DI), X0, X1
	VMOVSS X1, (DI)
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  axpytail

axpydone:
	VZEROUPPER
	RET
