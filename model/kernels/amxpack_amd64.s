//go:build !purego

#include "textflag.h"

// packQ80AMX(pk *byte, ws *float32, src *byte, rb, nb int): the assembly
// form of packQ80 (amx_amd64.go). For each block, the 16 rows' 32 quants
// (8 dwords each) are transposed into the B tile (dword k of row r at
// 64k + 4r) with unpack and permute steps, and the 16 f16 scales converted.
// Row r < 8 is at P_r, row r+8 at P_r + 8*rb (R15).

// Transposes of 8 vectors holding, per 256-bit half, 8 rows x 8 dwords.
#define UNPCK(a, b, lo, hi) VPUNPCKLDQ b, a, lo; VPUNPCKHDQ b, a, hi
#define UNPCKQ(a, b, lo, hi) VPUNPCKLQDQ b, a, lo; VPUNPCKHQDQ b, a, hi

TEXT ·packQ80AMX(SB), NOSPLIT, $0-40
	MOVQ pk+0(FP), DI
	MOVQ ws+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ rb+24(FP), R9
	MOVQ nb+32(FP), R10
	LEAQ (R9)(R9*1), AX
	LEAQ (SI)(R9*1), BX     // row 1
	LEAQ (SI)(AX*1), CX     // row 2
	LEAQ (BX)(AX*1), DX     // row 3
	LEAQ (CX)(AX*1), R11    // row 4
	LEAQ (DX)(AX*1), R12    // row 5
	LEAQ (R11)(AX*1), R13   // row 6
	LEAQ (R12)(AX*1), R14   // row 7
	LEAQ (R9*8), R15        // 8 rows
	// permutation indices (qwords) for the 128-bit lane step
	MOVQ $·packQ80Idx(SB), AX
	VMOVDQU64 (AX), Z30
	VMOVDQU64 64(AX), Z31
loop:
	VMOVDQU 2(SI), Y0
	VINSERTI64X4 $1, 2(SI)(R15*1), Z0, Z0
	VMOVDQU 2(BX), Y1
	VINSERTI64X4 $1, 2(BX)(R15*1), Z1, Z1
	VMOVDQU 2(CX), Y2
	VINSERTI64X4 $1, 2(CX)(R15*1), Z2, Z2
	VMOVDQU 2(DX), Y3
	VINSERTI64X4 $1, 2(DX)(R15*1), Z3, Z3
	VMOVDQU 2(R11), Y4
	VINSERTI64X4 $1, 2(R11)(R15*1), Z4, Z4
	VMOVDQU 2(R12), Y5
	VINSERTI64X4 $1, 2(R12)(R15*1), Z5, Z5
	VMOVDQU 2(R13), Y6
	VINSERTI64X4 $1, 2(R13)(R15*1), Z6, Z6
	VMOVDQU 2(R14), Y7
	VINSERTI64X4 $1, 2(R14)(R15*1), Z7, Z7
	UNPCK(Z0, Z1, Z8, Z9)
	UNPCK(Z2, Z3, Z10, Z11)
	UNPCK(Z4, Z5, Z12, Z13)
	UNPCK(Z6, Z7, Z14, Z15)
	UNPCKQ(Z8, Z10, Z16, Z17)
	UNPCKQ(Z9, Z11, Z18, Z19)
	UNPCKQ(Z12, Z14, Z20, Z21)
	UNPCKQ(Z13, Z15, Z22, Z23)
	VMOVDQA64 Z30, Z24
	VPERMI2Q Z20, Z16, Z24
	VMOVDQU64 Z24, 0(DI)
	VMOVDQA64 Z31, Z25
	VPERMI2Q Z20, Z16, Z25
	VMOVDQU64 Z25, 256(DI)
	VMOVDQA64 Z30, Z24
	VPERMI2Q Z21, Z17, Z24
	VMOVDQU64 Z24, 64(DI)
	VMOVDQA64 Z31, Z25
	VPERMI2Q Z21, Z17, Z25
	VMOVDQU64 Z25, 320(DI)
	VMOVDQA64 Z30, Z24
	VPERMI2Q Z22, Z18, Z24
	VMOVDQU64 Z24, 128(DI)
	VMOVDQA64 Z31, Z25
	VPERMI2Q Z22, Z18, Z25
	VMOVDQU64 Z25, 384(DI)
	VMOVDQA64 Z30, Z24
	VPERMI2Q Z23, Z19, Z24
	VMOVDQU64 Z24, 192(DI)
	VMOVDQA64 Z31, Z25
	VPERMI2Q Z23, Z19, Z25
	VMOVDQU64 Z25, 448(DI)
	VPINSRW $0, (SI), X26, X26
	VPINSRW $1, (BX), X26, X26
	VPINSRW $2, (CX), X26, X26
	VPINSRW $3, (DX), X26, X26
	VPINSRW $4, (R11), X26, X26
	VPINSRW $5, (R12), X26, X26
	VPINSRW $6, (R13), X26, X26
	VPINSRW $7, (R14), X26, X26
	VPINSRW $0, (SI)(R15*1), X27, X27
	VPINSRW $1, (BX)(R15*1), X27, X27
	VPINSRW $2, (CX)(R15*1), X27, X27
	VPINSRW $3, (DX)(R15*1), X27, X27
	VPINSRW $4, (R11)(R15*1), X27, X27
	VPINSRW $5, (R12)(R15*1), X27, X27
	VPINSRW $6, (R13)(R15*1), X27, X27
	VPINSRW $7, (R14)(R15*1), X27, X27
	VINSERTI32X4 $1, X27, Y26, Y26
	VCVTPH2PS Y26, Z26
	VMOVUPS Z26, (R8)
	ADDQ $34, SI
	ADDQ $34, BX
	ADDQ $34, CX
	ADDQ $34, DX
	ADDQ $34, R11
	ADDQ $34, R12
	ADDQ $34, R13
	ADDQ $34, R14
	ADDQ $512, DI
	ADDQ $64, R8
	DECQ R10
	JNZ loop
	VZEROUPPER
	RET

// qword indices: lane 0 of a, lane 0 of b, lane 2 of a, lane 2 of b; then lanes 1 and 3.
DATA ·packQ80Idx+0(SB)/8, $0
DATA ·packQ80Idx+8(SB)/8, $1
DATA ·packQ80Idx+16(SB)/8, $8
DATA ·packQ80Idx+24(SB)/8, $9
DATA ·packQ80Idx+32(SB)/8, $4
DATA ·packQ80Idx+40(SB)/8, $5
DATA ·packQ80Idx+48(SB)/8, $12
DATA ·packQ80Idx+56(SB)/8, $13
DATA ·packQ80Idx+64(SB)/8, $2
DATA ·packQ80Idx+72(SB)/8, $3
DATA ·packQ80Idx+80(SB)/8, $10
DATA ·packQ80Idx+88(SB)/8, $11
DATA ·packQ80Idx+96(SB)/8, $6
DATA ·packQ80Idx+104(SB)/8, $7
DATA ·packQ80Idx+112(SB)/8, $14
DATA ·packQ80Idx+120(SB)/8, $15
GLOBL ·packQ80Idx(SB), RODATA, $128
