//go:build !purego

#include "textflag.h"

DATA q8kAbs<>+0(SB)/4, $0x7fffffff
GLOBL q8kAbs<>(SB), RODATA|NOPTR, $4
DATA q8k127<>+0(SB)/4, $127
GLOBL q8k127<>(SB), RODATA|NOPTR, $4
DATA q8kM127<>+0(SB)/4, $-127.0
GLOBL q8kM127<>(SB), RODATA|NOPTR, $4
DATA q8kOne<>+0(SB)/4, $1.0
GLOBL q8kOne<>(SB), RODATA|NOPTR, $4
DATA q8kInf<>+0(SB)/4, $0x7f800000
GLOBL q8kInf<>(SB), RODATA|NOPTR, $4
DATA q8kPerm<>+0(SB)/4, $0
DATA q8kPerm<>+4(SB)/4, $4
DATA q8kPerm<>+8(SB)/4, $1
DATA q8kPerm<>+12(SB)/4, $5
DATA q8kPerm<>+16(SB)/4, $2
DATA q8kPerm<>+20(SB)/4, $6
DATA q8kPerm<>+24(SB)/4, $3
DATA q8kPerm<>+28(SB)/4, $7
GLOBL q8kPerm<>(SB), RODATA|NOPTR, $32

// func q8kBlockAVX2(x *float32, y *quant.BlockQ8K) bool
//
// Quantises one 256-float block exactly like quant.QuantizeQ8K (whose rounding
// is half to even, as VCVTPS2DQ's default mode). Returns false, writing
// nothing, when max|x| is 0, infinite, NaN or so small that -127/max
// overflows: the caller handles those blocks with the reference.
TEXT ·q8kBlockAVX2(SB), NOSPLIT, $0-17
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	VBROADCASTSS q8kAbs<>(SB), Y15

	// Pass 1: max |x|, as integers: the bits of non-negative floats order
	// as their values do, and a NaN's lie above +Inf's, so one NaN makes
	// the max a NaN (VMAXPS would drop it: it returns its second operand
	// when either is a NaN) and the block goes to the reference below.
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ SI, AX
	MOVQ $16, CX
amax:
	VANDPS (AX), Y15, Y2
	VANDPS 32(AX), Y15, Y3
	VPMAXSD Y2, Y0, Y0
	VPMAXSD Y3, Y1, Y1
	ADDQ $64, AX
	DECQ CX
	JNZ  amax
	VPMAXSD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VPMAXSD X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VPMAXSD X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VPMAXSD X1, X0, X0
	// Reject 0, Inf and NaN (NaN compares unordered, so test "0 < amax < Inf").
	VXORPS X1, X1, X1
	VUCOMISS X1, X0
	JBE  reject
	VMOVSS q8kInf<>(SB), X1
	VUCOMISS X0, X1
	JBE  reject
	VBROADCASTSS X0, Y0

	// Pass 2: the first element whose |x| is the max gives the signed max.
	MOVQ SI, AX
	XORQ DX, DX
find:
	VANDPS (AX)(DX*4), Y15, Y2
	VCMPPS $0, Y0, Y2, Y2
	VMOVMSKPS Y2, BX
	TESTL BX, BX
	JNZ  found
	ADDQ $8, DX
	JMP  find
found:
	BSFL BX, BX
	ADDQ BX, DX
	VMOVSS (AX)(DX*4), X3          // mx
	VMOVSS q8kM127<>(SB), X4
	VDIVSS X3, X4, X4              // iscale = -127/mx
	// A max below ~7.5e-37 overflows iscale; the reference's integer trick
	// then yields values VCVTPS2DQ does not, so leave such blocks to it.
	VANDPS X15, X4, X6
	VMOVSS q8kInf<>(SB), X7
	VUCOMISS X6, X7
	JBE  reject
	VMOVSS q8kOne<>(SB), X5
	VDIVSS X4, X5, X5              // d = 1/iscale
	VMOVSS X5, (DI)
	VBROADCASTSS X4, Y4
	VPBROADCASTD q8k127<>(SB), Y14
	VMOVDQU q8kPerm<>(SB), Y13

	// Pass 3: 32 quants and 2 block sums per iteration.
	MOVQ $8, CX
	LEAQ 4(DI), R8
	LEAQ 260(DI), R9
quant:
	VMULPS (SI), Y4, Y0
	VMULPS 32(SI), Y4, Y1
	VMULPS 64(SI), Y4, Y2
	VMULPS 96(SI), Y4, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPMINSD Y14, Y0, Y0
	VPMINSD Y14, Y1, Y1
	VPMINSD Y14, Y2, Y2
	VPMINSD Y14, Y3, Y3
	VPADDD Y1, Y0, Y5
	VPADDD Y3, Y2, Y6
	VPHADDD Y6, Y5, Y5
	VPHADDD Y5, Y5, Y5
	VEXTRACTI128 $1, Y5, X6
	VPADDD X6, X5, X5
	VPACKSSDW X5, X5, X5
	VMOVD X5, (R9)
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, (R8)
	ADDQ $128, SI
	ADDQ $32, R8
	ADDQ $4, R9
	DECQ CX
	JNZ  quant
	VZEROUPPER
	MOVB $1, ret+16(FP)
	RET

reject:
	VZEROUPPER
	MOVB $0, ret+16(FP)
	RET
