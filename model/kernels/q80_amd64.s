//go:build !purego

#include "textflag.h"

DATA ones16<>+0(SB)/4, $0x00010001
GLOBL ones16<>(SB), RODATA|NOPTR, $4

// One Q8_0 block at weight offset WO, activation offset AO: ggml's
// mul_sum_i8_pairs_float (|w| times sign-adjusted a with VPMADDUBSW).
#define Q80_BLOCK(WO, AO, ACC) \
	VMOVDQU (WO+2)(SI), Y2 \
	Q0_DOT(WO, AO, ACC)

// A Q4_0 block: nibbles to bytes (low nibbles are weights 0..15, high ones
// 16..31), minus 8, then the Q8_0 product.
#define Q40_BLOCK(WO, AO, ACC) \
	VMOVDQU (WO+2)(SI), X2 \
	VPSRLW $4, X2, X3 \
	VINSERTI128 $1, X3, Y2, Y2 \
	VPAND Y15, Y2, Y2 \
	VPSUBB Y13, Y2, Y2 \
	Q0_DOT(WO, AO, ACC)

#define Q0_DOT(WO, AO, ACC) \
	VMOVDQU (AO+4)(DI), Y3 \
	VPSIGNB Y2, Y2, Y5 \
	VPSIGNB Y2, Y3, Y3 \
	VPMADDUBSW Y3, Y5, Y5 \
	VPMADDWD Y14, Y5, Y5 \
	VCVTDQ2PS Y5, Y5 \
	MOVWLZX WO(SI), AX \
	VMOVD AX, X6 \
	VCVTPH2PS X6, X6 \
	VMULSS AO(DI), X6, X6 \
	VBROADCASTSS X6, Y6 \
	VFMADD231PS Y5, Y6, ACC

// func q80AVX2(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32)
TEXT ·q80AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ rows+24(FP), DX
	MOVQ out+32(FP), R8
	VPBROADCASTD ones16<>(SB), Y14

row:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0

	// One accumulator over the blocks in order, as q80AVX2h2 and
	// q80AVX2x4 keep per row and token, so a token's result does not
	// depend on the kernel that computed it.
block:
	Q80_BLOCK(0, 0, Y0)
	ADDQ $34, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  block

	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VMOVHLPS X0, X0, X2
	VADDPS X2, X0, X0
	VPSHUFD $1, X0, X2
	VADDSS X2, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ DX
	JNZ  row
	VZEROUPPER
	RET

DATA nib40<>+0(SB)/4, $0x0f0f0f0f
GLOBL nib40<>(SB), RODATA|NOPTR, $4
DATA eights<>+0(SB)/4, $0x08080808
GLOBL eights<>(SB), RODATA|NOPTR, $4

// func q40AVX2(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32)
TEXT ·q40AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ rows+24(FP), DX
	MOVQ out+32(FP), R8
	VPBROADCASTD ones16<>(SB), Y14
	VPBROADCASTD nib40<>(SB), Y15
	VPBROADCASTD eights<>(SB), Y13

row40:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	CMPQ CX, $2
	JB   tail40

pair40:
	Q40_BLOCK(0, 0, Y0)
	Q40_BLOCK(18, 36, Y1)
	ADDQ $36, SI
	ADDQ $72, DI
	SUBQ $2, CX
	CMPQ CX, $2
	JAE  pair40

tail40:
	TESTQ CX, CX
	JZ    done40
	Q40_BLOCK(0, 0, Y0)
	ADDQ $18, SI

done40:
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VMOVHLPS X0, X0, X2
	VADDPS X2, X0, X0
	VPSHUFD $1, X0, X2
	VADDSS X2, X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ DX
	JNZ  row40
	VZEROUPPER
	RET

// func q80AVX2x4(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32, ldo int)
//
// Q8_0 rows times 4 activation vectors (a: 4 x nb blocks; out[t*ldo+r]): the
// weight block's |w| and scale are computed once for all 4 tokens.
TEXT ·q80AVX2x4(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ nb+16(FP), R11
	IMULQ $36, R11
	LEAQ (R11)(R11*2), R10
	MOVQ rows+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ ldo+40(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R9
	VPBROADCASTD ones16<>(SB), Y14
q80x4row:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
q80x4block:
	VMOVDQU 2(SI), Y4
	VPSIGNB Y4, Y4, Y5
	MOVWLZX 0(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, Y6
	VMOVDQU 4(DI), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y7
	VPMADDWD Y14, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 0(DI), Y8
	VMULPS Y6, Y8, Y8
	VFMADD231PS Y7, Y8, Y0
	VMOVDQU 4(DI)(R11*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y7
	VPMADDWD Y14, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 0(DI)(R11*1), Y8
	VMULPS Y6, Y8, Y8
	VFMADD231PS Y7, Y8, Y1
	VMOVDQU 4(DI)(R11*2), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y7
	VPMADDWD Y14, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 0(DI)(R11*2), Y8
	VMULPS Y6, Y8, Y8
	VFMADD231PS Y7, Y8, Y2
	VMOVDQU 4(DI)(R10*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y7
	VPMADDWD Y14, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 0(DI)(R10*1), Y8
	VMULPS Y6, Y8, Y8
	VFMADD231PS Y7, Y8, Y3
	ADDQ $34, SI
	ADDQ $36, DI
	DECQ CX
	JNZ q80x4block
	VEXTRACTF128 $1, Y0, X12
	VADDPS X12, X0, X0
	VMOVHLPS X0, X0, X12
	VADDPS X12, X0, X0
	VPSHUFD $1, X0, X12
	VADDSS X12, X0, X0
	VMOVSS X0, (R8)
	VEXTRACTF128 $1, Y1, X12
	VADDPS X12, X1, X1
	VMOVHLPS X1, X1, X12
	VADDPS X12, X1, X1
	VPSHUFD $1, X1, X12
	VADDSS X12, X1, X1
	VMOVSS X1, (R8)(R12*1)
	VEXTRACTF128 $1, Y2, X12
	VADDPS X12, X2, X2
	VMOVHLPS X2, X2, X12
	VADDPS X12, X2, X2
	VPSHUFD $1, X2, X12
	VADDSS X12, X2, X2
	VMOVSS X2, (R8)(R12*2)
	VEXTRACTF128 $1, Y3, X12
	VADDPS X12, X3, X3
	VMOVHLPS X3, X3, X12
	VADDPS X12, X3, X3
	VPSHUFD $1, X3, X12
	VADDSS X12, X3, X3
	VMOVSS X3, (R8)(R9*1)
	ADDQ $4, R8
	DECQ DX
	JNZ q80x4row
	VZEROUPPER
	RET

// One Q8_0 block of each stream: rows r (SI) and r+half (SI+R10) against
// the same activation block (DI), into Y0 and Y1.
#define Q80_H2_BLOCK(WO, AO) \
	VMOVDQU (AO+4)(DI), Y3 \
	VMOVDQU (WO+2)(SI), Y2 \
	VMOVDQU (WO+2)(SI)(R10*1), Y7 \
	VPSIGNB Y2, Y2, Y5 \
	VPSIGNB Y2, Y3, Y4 \
	VPMADDUBSW Y4, Y5, Y5 \
	VPMADDWD Y14, Y5, Y5 \
	VCVTDQ2PS Y5, Y5 \
	VPSIGNB Y7, Y7, Y8 \
	VPSIGNB Y7, Y3, Y9 \
	VPMADDUBSW Y9, Y8, Y8 \
	VPMADDWD Y14, Y8, Y8 \
	VCVTDQ2PS Y8, Y8 \
	MOVWLZX WO(SI), AX \
	MOVWLZX WO(SI)(R10*1), BX \
	VMOVD AX, X6 \
	VMOVD BX, X10 \
	VCVTPH2PS X6, X6 \
	VCVTPH2PS X10, X10 \
	VMOVSS AO(DI), X11 \
	VMULSS X11, X6, X6 \
	VMULSS X11, X10, X10 \
	VBROADCASTSS X6, Y6 \
	VBROADCASTSS X10, Y10 \
	VFMADD231PS Y5, Y6, Y0 \
	VFMADD231PS Y8, Y10, Y1

// func q80AVX2h2(w *byte, a *quant.BlockQ8_0, nb, half int, out *float32, pf int)
//
// Rows r and r+half for r < half (half > 0), like bf16AVX2h2: two long
// sequential weight streams sharing each activation load, each prefetched
// pf bytes ahead (R12): q80PrefetchAMD or q80PrefetchIntel.
TEXT ·q80AVX2h2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ half+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ pf+40(FP), R12
	MOVQ nb+16(FP), R10
	IMULQ $34, R10
	IMULQ DX, R10
	LEAQ 0(DX*4), R11
	VPBROADCASTD ones16<>(SB), Y14

q80h2row:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	CMPQ CX, $2
	JB   q80h2tail

q80h2pair:
	PREFETCHT0 (SI)(R12*1)
	LEAQ (SI)(R10*1), AX
	PREFETCHT0 (AX)(R12*1)
	Q80_H2_BLOCK(0, 0)
	Q80_H2_BLOCK(34, 36)
	ADDQ $68, SI
	ADDQ $72, DI
	SUBQ $2, CX
	CMPQ CX, $2
	JAE  q80h2pair

q80h2tail:
	TESTQ CX, CX
	JZ    q80h2done
	Q80_H2_BLOCK(0, 0)
	ADDQ $34, SI

q80h2done:
	// out[r] = sum of Y0, out[r+half] = sum of Y1, each summed in the
	// order of q80AVX2 and q80AVX2x4.
	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VMOVHLPS X0, X0, X2
	VADDPS X2, X0, X0
	VPSHUFD $1, X0, X2
	VADDSS X2, X0, X0
	VMOVSS X0, (R8)
	VEXTRACTF128 $1, Y1, X3
	VADDPS X3, X1, X1
	VMOVHLPS X1, X1, X3
	VADDPS X3, X1, X1
	VPSHUFD $1, X1, X3
	VADDSS X3, X1, X1
	VMOVSS X1, (R8)(R11*1)
	ADDQ $4, R8
	DECQ DX
	JNZ  q80h2row
	VZEROUPPER
	RET
