//go:build !purego

#include "textflag.h"

// func f16x4Z(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)
//
// The AVX-512 form of f16AVX2x4 (floatx4_amd64.s), same contract: rows
// rows of n IEEE halves (row stride ws halves) times 4 activation vectors of
// n floats (stride xs floats); out[t*ldo+r] receives (or, with acc, has
// added to it) row r against token t. Its main callers are attention over
// the f16 KV cache: 4 query heads against the keys of a run of slots
// (n = head dim), and 4 weight vectors against the transposed values (n =
// the run's length, rows = head dim, ws = the cache's capacity).
//
// Four rows at a time: 16 weights of each converted once (VCVTPH2PS), the
// 4 tokens' 16 activations loaded once, 16 FMAs into Z0-Z15 (row r, token t
// in Z(4r+t)); the last n%16 elements go through the same body with masked
// (zeroing, fault-suppressing) loads, so nothing is read past a row or an
// activation vector. The 16 sums are reduced so that each token's 4 rows
// land in one XMM, stored contiguously. Rows left over (< 4) run one at a
// time with 4 accumulators.
//
// Registers: R14 the row group, SI its first row (the others R15, 2*R15 and
// AX = 3*R15 bytes on), DI token 0's activations (the others R12, 2*R12 and
// BX = 3*R12 bytes on), R8 out[r] (the tokens R10, 2*R10, R11 = 3*R10 bytes
// apart), K1 the tail mask.
//
// go vet's asmdecl checks the argument offsets; TestMatMulF16Strided and
// TestMatMulFloat hold it to the pure-Go references.

// The 16 accumulators' upper 256 bits added to their lower.
#define FOLD(z, y) VEXTRACTF64X4 $1, z, Y24; VADDPS Y24, y, y

// The 4 YMM sums a-d into the 4 lanes of xa (lane i = sum of the i-th);
// b's register is free after the first add and serves as the temporary.
#define REDUCE4(a, b, c, d, xa, xb) \
	VHADDPS b, a, a \
	VHADDPS d, c, c \
	VHADDPS c, a, a \
	VEXTRACTF128 $1, a, xb \
	VADDPS xb, xa, xa

// 16 FMAs: the 4 weight vectors Z16-Z19 times the 4 token vectors Z20-Z23.
#define FMA4x4 \
	VFMADD231PS Z20, Z16, Z0 \
	VFMADD231PS Z21, Z16, Z1 \
	VFMADD231PS Z22, Z16, Z2 \
	VFMADD231PS Z23, Z16, Z3 \
	VFMADD231PS Z20, Z17, Z4 \
	VFMADD231PS Z21, Z17, Z5 \
	VFMADD231PS Z22, Z17, Z6 \
	VFMADD231PS Z23, Z17, Z7 \
	VFMADD231PS Z20, Z18, Z8 \
	VFMADD231PS Z21, Z18, Z9 \
	VFMADD231PS Z22, Z18, Z10 \
	VFMADD231PS Z23, Z18, Z11 \
	VFMADD231PS Z20, Z19, Z12 \
	VFMADD231PS Z21, Z19, Z13 \
	VFMADD231PS Z22, Z19, Z14 \
	VFMADD231PS Z23, Z19, Z15

TEXT ·f16x4Z(SB), NOSPLIT, $0-65
	MOVQ w+0(FP), R14
	MOVQ ws+8(FP), R15
	SHLQ $1, R15
	LEAQ (R15)(R15*2), AX
	MOVQ x+16(FP), R13
	MOVQ xs+24(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), BX
	MOVQ n+32(FP), R9
	MOVQ rows+40(FP), DX
	MOVQ out+48(FP), R8
	MOVQ ldo+56(FP), R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R11
	MOVQ R9, CX
	ANDQ $15, CX
	MOVL $1, SI
	SHLL CX, SI
	DECL SI
	KMOVW SI, K1

quad:
	CMPQ DX, $4
	JB   single
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
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

quad16:
	CMPQ CX, $16
	JB   quadtail
	VCVTPH2PS (SI), Z16
	VCVTPH2PS (SI)(R15*1), Z17
	VCVTPH2PS (SI)(R15*2), Z18
	VCVTPH2PS (SI)(AX*1), Z19
	VMOVUPS (DI), Z20
	VMOVUPS (DI)(R12*1), Z21
	VMOVUPS (DI)(R12*2), Z22
	VMOVUPS (DI)(BX*1), Z23
	FMA4x4
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  quad16

quadtail:
	TESTQ CX, CX
	JZ    quadsum
	VCVTPH2PS.Z (SI), K1, Z16
	VCVTPH2PS.Z (SI)(R15*1), K1, Z17
	VCVTPH2PS.Z (SI)(R15*2), K1, Z18
	VCVTPH2PS.Z (SI)(AX*1), K1, Z19
	VMOVUPS.Z (DI), K1, Z20
	VMOVUPS.Z (DI)(R12*1), K1, Z21
	VMOVUPS.Z (DI)(R12*2), K1, Z22
	VMOVUPS.Z (DI)(BX*1), K1, Z23
	FMA4x4

quadsum:
	FOLD(Z0, Y0)
	FOLD(Z1, Y1)
	FOLD(Z2, Y2)
	FOLD(Z3, Y3)
	FOLD(Z4, Y4)
	FOLD(Z5, Y5)
	FOLD(Z6, Y6)
	FOLD(Z7, Y7)
	FOLD(Z8, Y8)
	FOLD(Z9, Y9)
	FOLD(Z10, Y10)
	FOLD(Z11, Y11)
	FOLD(Z12, Y12)
	FOLD(Z13, Y13)
	FOLD(Z14, Y14)
	FOLD(Z15, Y15)
	REDUCE4(Y0, Y4, Y8, Y12, X0, X4)
	REDUCE4(Y1, Y5, Y9, Y13, X1, X5)
	REDUCE4(Y2, Y6, Y10, Y14, X2, X6)
	REDUCE4(Y3, Y7, Y11, Y15, X3, X7)
	// All four outputs are read before any is written: with ldo = 0 they
	// are one place (matVecFloatLong's four copies of a token).
	CMPB acc+64(FP), $0
	JEQ  quadput
	VADDPS (R8), X0, X0
	VADDPS (R8)(R10*1), X1, X1
	VADDPS (R8)(R10*2), X2, X2
	VADDPS (R8)(R11*1), X3, X3

quadput:
	VMOVUPS X0, (R8)
	VMOVUPS X1, (R8)(R10*1)
	VMOVUPS X2, (R8)(R10*2)
	VMOVUPS X3, (R8)(R11*1)
	LEAQ (R14)(R15*4), R14
	ADDQ $16, R8
	SUBQ $4, DX
	JMP  quad

single:
	TESTQ DX, DX
	JZ    done
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

single16:
	CMPQ CX, $16
	JB   singletail
	VCVTPH2PS (SI), Z16
	VFMADD231PS (DI), Z16, Z0
	VFMADD231PS (DI)(R12*1), Z16, Z1
	VFMADD231PS (DI)(R12*2), Z16, Z2
	VFMADD231PS (DI)(BX*1), Z16, Z3
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  single16

singletail:
	TESTQ CX, CX
	JZ    singlesum
	VCVTPH2PS.Z (SI), K1, Z16
	VMOVUPS.Z (DI), K1, Z20
	VMOVUPS.Z (DI)(R12*1), K1, Z21
	VMOVUPS.Z (DI)(R12*2), K1, Z22
	VMOVUPS.Z (DI)(BX*1), K1, Z23
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z21, Z16, Z1
	VFMADD231PS Z22, Z16, Z2
	VFMADD231PS Z23, Z16, Z3

singlesum:
	FOLD(Z0, Y0)
	FOLD(Z1, Y1)
	FOLD(Z2, Y2)
	FOLD(Z3, Y3)
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1)
	// Lane t is token t's sum: out[t*ldo].
	CMPB acc+64(FP), $0
	JEQ  singleput
	VMOVSS (R8), X4
	VINSERTPS $0x10, (R8)(R10*1), X4, X4
	VINSERTPS $0x20, (R8)(R10*2), X4, X4
	VINSERTPS $0x30, (R8)(R11*1), X4, X4
	VADDPS X4, X0, X0

singleput:
	VMOVSS X0, (R8)
	VEXTRACTPS $1, X0, (R8)(R10*1)
	VEXTRACTPS $2, X0, (R8)(R10*2)
	VEXTRACTPS $3, X0, (R8)(R11*1)
	ADDQ R15, R14
	ADDQ $4, R8
	DECQ DX
	JMP  single

done:
	VZEROUPPER
	RET
