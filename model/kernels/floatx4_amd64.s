//go:build !purego

#include "textflag.h"
#include "floatload_amd64.h"

// Four-token float kernels for prefill: each weight element is converted to
// f32 once and multiplied into 4 token accumulators, three rows at a time (12
// YMM accumulators, 3 rows x 4 tokens, so each activation load feeds 3 FMAs),
// then a pair (8 accumulators) and a single row for the rest. They work on a
// panel of the matrix: rows rows of n elements with a row stride of ws
// elements, times 4 activation vectors of n floats with a stride of xs
// floats; out[t*ldo+r] receives (or, with acc, has added to it) row r against
// token t. The activations stream from L2 past the panel (floatx4.go), so
// loads per FMA decide the speed: the 3-row tile lifted a 1-thread BF16 1.7B
// prefill (pp64) from ~14.2 to ~16.5-18 tok/s against the 2-row one.
//
// Registers: R14 the panel's current row group, SI the weights of its first
// row (the next ones R15 = 2*ws bytes apart), DI the activations of token 0
// (tokens 1-3 at R12 = 4*xs, 2*R12 and BX = 12*xs bytes on), R8 out[r],
// R10 = 4*ldo and R11 = 12*ldo bytes. The n%8 tail runs after the
// accumulators are reduced to 4 sums in an XMM register, with the token
// values gathered into one XMM, so scalar VEX ops never clear the upper half
// of a live accumulator.

// LOADW_BF16 needs Y14, which the 3-row loop holds a row in: that loop uses
// LOADW_BF16M, and the pair and single loops load the mask after it.

// 8 elements at byte offset off of the 4 tokens times rows wa and wb into
// Y0-Y3 (row a) and Y4-Y7 (row b).
#define FMA2x4(off, wa, wb) \
	VMOVUPS off(DI), Y10 \
	VMOVUPS off(DI)(R12*1), Y11 \
	VMOVUPS off(DI)(R12*2), Y12 \
	VMOVUPS off(DI)(BX*1), Y13 \
	VFMADD231PS Y10, wa, Y0 \
	VFMADD231PS Y10, wb, Y4 \
	VFMADD231PS Y11, wa, Y1 \
	VFMADD231PS Y11, wb, Y5 \
	VFMADD231PS Y12, wa, Y2 \
	VFMADD231PS Y12, wb, Y6 \
	VFMADD231PS Y13, wa, Y3 \
	VFMADD231PS Y13, wb, Y7

// 8 elements at byte offset off of the 4 tokens times one row into a0-a3.
#define FMA1x4(off, w, a0, a1, a2, a3) \
	VFMADD231PS off(DI), w, a0 \
	VFMADD231PS off(DI)(R12*1), w, a1 \
	VFMADD231PS off(DI)(R12*2), w, a2 \
	VFMADD231PS off(DI)(BX*1), w, a3

// 8 activations of one token at m times the 3 rows in Y12-Y14 into a0-a2.
#define FMA3x4(m, a0, a1, a2) \
	VMOVUPS m, Y15 \
	VFMADD231PS Y15, Y12, a0 \
	VFMADD231PS Y15, Y13, a1 \
	VFMADD231PS Y15, Y14, a2

// The 4 accumulators a-d (YMM) summed into the 4 lanes of xa (a's XMM):
// lane t = horizontal sum of token t's accumulator.
#define REDUCE4(a, b, c, d, xa, xt) \
	VHADDPS b, a, a \
	VHADDPS d, c, c \
	VHADDPS c, a, a \
	VEXTRACTF128 $1, a, xt \
	VADDPS xt, xa, xa

// The current element of the 4 tokens into the lanes of x.
#define GATHER4(x) \
	VMOVSS (DI), x \
	VINSERTPS $0x10, (DI)(R12*1), x, x \
	VINSERTPS $0x20, (DI)(R12*2), x, x \
	VINSERTPS $0x30, (DI)(BX*1), x, x

// Adds out[t*ldo] + off bytes to lane t of x (xt is clobbered).
#define ADD4(x, off, xt) \
	VMOVSS off(R8), xt \
	VINSERTPS $0x10, off(R8)(R10*1), xt, xt \
	VINSERTPS $0x20, off(R8)(R10*2), xt, xt \
	VINSERTPS $0x30, off(R8)(R11*1), xt, xt \
	VADDPS xt, x, x

// Lane t of x to out[t*ldo] + off bytes.
#define STORE4(x, off) \
	VMOVSS x, off(R8) \
	VEXTRACTPS $1, x, off(R8)(R10*1) \
	VEXTRACTPS $2, x, off(R8)(R10*2) \
	VEXTRACTPS $3, x, off(R8)(R11*1)

// func bf16AVX2x4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)
TEXT ·bf16AVX2x4(SB), NOSPLIT, $0-65
	MOVQ w+0(FP), R14
	MOVQ ws+8(FP), R15
	SHLQ $1, R15
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

bf16x4triple:
	CMPQ DX, $3
	JB   bf16x4pairinit
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

bf16x4triple8:
	CMPQ CX, $8
	JB   bf16x4triplesum
	LOADW_BF16M((SI), Y12)
	LOADW_BF16M((SI)(R15*1), Y13)
	LOADW_BF16M((SI)(R15*2), Y14)
	FMA3x4((DI), Y0, Y4, Y8)
	FMA3x4((DI)(R12*1), Y1, Y5, Y9)
	FMA3x4((DI)(R12*2), Y2, Y6, Y10)
	FMA3x4((DI)(BX*1), Y3, Y7, Y11)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  bf16x4triple8

bf16x4triplesum:
	REDUCE4(Y0, Y1, Y2, Y3, X0, X12)
	REDUCE4(Y4, Y5, Y6, Y7, X4, X12)
	REDUCE4(Y8, Y9, Y10, Y11, X8, X12)

bf16x4tripletail:
	TESTQ CX, CX
	JZ    bf16x4triplestore
	SCALW_BF16((SI), X12)
	SCALW_BF16((SI)(R15*1), X13)
	SCALW_BF16((SI)(R15*2), X14)
	GATHER4(X15)
	VFMADD231PS X15, X12, X0
	VFMADD231PS X15, X13, X4
	VFMADD231PS X15, X14, X8
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  bf16x4tripletail

bf16x4triplestore:
	CMPB acc+64(FP), $0
	JEQ  bf16x4tripleput
	ADD4(X0, 0, X12)
	ADD4(X4, 4, X12)
	ADD4(X8, 8, X12)

bf16x4tripleput:
	STORE4(X0, 0)
	STORE4(X4, 4)
	STORE4(X8, 8)
	LEAQ (R14)(R15*2), R14
	ADDQ R15, R14
	ADDQ $12, R8
	SUBQ $3, DX
	JMP  bf16x4triple

bf16x4pairinit:
	INITW_BF16

bf16x4pair:
	CMPQ DX, $2
	JB   bf16x4single
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

bf16x4pair16:
	CMPQ CX, $16
	JB   bf16x4pair8
	LOADW_BF16((SI), Y8)
	LOADW_BF16((SI)(R15*1), Y9)
	FMA2x4(0, Y8, Y9)
	LOADW_BF16(16(SI), Y8)
	LOADW_BF16(16(SI)(R15*1), Y9)
	FMA2x4(32, Y8, Y9)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  bf16x4pair16

bf16x4pair8:
	CMPQ CX, $8
	JB   bf16x4pairsum
	LOADW_BF16((SI), Y8)
	LOADW_BF16((SI)(R15*1), Y9)
	FMA2x4(0, Y8, Y9)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX

bf16x4pairsum:
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1)
	REDUCE4(Y4, Y5, Y6, Y7, X4, X5)

bf16x4pairtail:
	TESTQ CX, CX
	JZ    bf16x4pairstore
	SCALW_BF16((SI), X8)
	SCALW_BF16((SI)(R15*1), X9)
	GATHER4(X10)
	VFMADD231PS X10, X8, X0
	VFMADD231PS X10, X9, X4
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  bf16x4pairtail

bf16x4pairstore:
	CMPB acc+64(FP), $0
	JEQ  bf16x4pairput
	ADD4(X0, 0, X1)
	ADD4(X4, 4, X5)

bf16x4pairput:
	STORE4(X0, 0)
	STORE4(X4, 4)
	LEAQ (R14)(R15*2), R14
	ADDQ $8, R8
	SUBQ $2, DX
	JMP  bf16x4pair

bf16x4single:
	TESTQ DX, DX
	JZ    bf16x4done
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

bf16x4single16:
	CMPQ CX, $16
	JB   bf16x4single8
	LOADW_BF16((SI), Y8)
	LOADW_BF16(16(SI), Y9)
	FMA1x4(0, Y8, Y0, Y1, Y2, Y3)
	FMA1x4(32, Y9, Y4, Y5, Y6, Y7)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  bf16x4single16

bf16x4single8:
	CMPQ CX, $8
	JB   bf16x4singlesum
	LOADW_BF16((SI), Y8)
	FMA1x4(0, Y8, Y0, Y1, Y2, Y3)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX

bf16x4singlesum:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1)

bf16x4singletail:
	TESTQ CX, CX
	JZ    bf16x4singlestore
	SCALW_BF16((SI), X8)
	GATHER4(X10)
	VFMADD231PS X10, X8, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  bf16x4singletail

bf16x4singlestore:
	CMPB acc+64(FP), $0
	JEQ  bf16x4singleput
	ADD4(X0, 0, X1)

bf16x4singleput:
	STORE4(X0, 0)

bf16x4done:
	VZEROUPPER
	RET

// func f16AVX2x4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)
TEXT ·f16AVX2x4(SB), NOSPLIT, $0-65
	MOVQ w+0(FP), R14
	MOVQ ws+8(FP), R15
	SHLQ $1, R15
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

f16x4triple:
	CMPQ DX, $3
	JB   f16x4pairinit
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

f16x4triple8:
	CMPQ CX, $8
	JB   f16x4triplesum
	LOADW_F16((SI), Y12)
	LOADW_F16((SI)(R15*1), Y13)
	LOADW_F16((SI)(R15*2), Y14)
	FMA3x4((DI), Y0, Y4, Y8)
	FMA3x4((DI)(R12*1), Y1, Y5, Y9)
	FMA3x4((DI)(R12*2), Y2, Y6, Y10)
	FMA3x4((DI)(BX*1), Y3, Y7, Y11)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f16x4triple8

f16x4triplesum:
	REDUCE4(Y0, Y1, Y2, Y3, X0, X12)
	REDUCE4(Y4, Y5, Y6, Y7, X4, X12)
	REDUCE4(Y8, Y9, Y10, Y11, X8, X12)

f16x4tripletail:
	TESTQ CX, CX
	JZ    f16x4triplestore
	SCALW_F16((SI), X12)
	SCALW_F16((SI)(R15*1), X13)
	SCALW_F16((SI)(R15*2), X14)
	GATHER4(X15)
	VFMADD231PS X15, X12, X0
	VFMADD231PS X15, X13, X4
	VFMADD231PS X15, X14, X8
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  f16x4tripletail

f16x4triplestore:
	CMPB acc+64(FP), $0
	JEQ  f16x4tripleput
	ADD4(X0, 0, X12)
	ADD4(X4, 4, X12)
	ADD4(X8, 8, X12)

f16x4tripleput:
	STORE4(X0, 0)
	STORE4(X4, 4)
	STORE4(X8, 8)
	LEAQ (R14)(R15*2), R14
	ADDQ R15, R14
	ADDQ $12, R8
	SUBQ $3, DX
	JMP  f16x4triple

f16x4pairinit:

f16x4pair:
	CMPQ DX, $2
	JB   f16x4single
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

f16x4pair16:
	CMPQ CX, $16
	JB   f16x4pair8
	LOADW_F16((SI), Y8)
	LOADW_F16((SI)(R15*1), Y9)
	FMA2x4(0, Y8, Y9)
	LOADW_F16(16(SI), Y8)
	LOADW_F16(16(SI)(R15*1), Y9)
	FMA2x4(32, Y8, Y9)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  f16x4pair16

f16x4pair8:
	CMPQ CX, $8
	JB   f16x4pairsum
	LOADW_F16((SI), Y8)
	LOADW_F16((SI)(R15*1), Y9)
	FMA2x4(0, Y8, Y9)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX

f16x4pairsum:
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1)
	REDUCE4(Y4, Y5, Y6, Y7, X4, X5)

f16x4pairtail:
	TESTQ CX, CX
	JZ    f16x4pairstore
	SCALW_F16((SI), X8)
	SCALW_F16((SI)(R15*1), X9)
	GATHER4(X10)
	VFMADD231PS X10, X8, X0
	VFMADD231PS X10, X9, X4
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  f16x4pairtail

f16x4pairstore:
	CMPB acc+64(FP), $0
	JEQ  f16x4pairput
	ADD4(X0, 0, X1)
	ADD4(X4, 4, X5)

f16x4pairput:
	STORE4(X0, 0)
	STORE4(X4, 4)
	LEAQ (R14)(R15*2), R14
	ADDQ $8, R8
	SUBQ $2, DX
	JMP  f16x4pair

f16x4single:
	TESTQ DX, DX
	JZ    f16x4done
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

f16x4single16:
	CMPQ CX, $16
	JB   f16x4single8
	LOADW_F16((SI), Y8)
	LOADW_F16(16(SI), Y9)
	FMA1x4(0, Y8, Y0, Y1, Y2, Y3)
	FMA1x4(32, Y9, Y4, Y5, Y6, Y7)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  f16x4single16

f16x4single8:
	CMPQ CX, $8
	JB   f16x4singlesum
	LOADW_F16((SI), Y8)
	FMA1x4(0, Y8, Y0, Y1, Y2, Y3)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX

f16x4singlesum:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1)

f16x4singletail:
	TESTQ CX, CX
	JZ    f16x4singlestore
	SCALW_F16((SI), X8)
	GATHER4(X10)
	VFMADD231PS X10, X8, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  f16x4singletail

f16x4singlestore:
	CMPB acc+64(FP), $0
	JEQ  f16x4singleput
	ADD4(X0, 0, X1)

f16x4singleput:
	STORE4(X0, 0)

f16x4done:
	VZEROUPPER
	RET
