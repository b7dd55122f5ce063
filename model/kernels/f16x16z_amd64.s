//go:build !purego

#include "textflag.h"

// func f16x16Z(w *byte, ws int, x *float32, n, rows int, out *float32, ldo int, acc bool, s *float32)
//
// f16x4Z's contract for 16 activation vectors at once: rows rows of n IEEE
// halves (row stride ws halves) times 16 vectors of n floats (XS bytes
// apart); out[t*ldo+r] receives (or, with acc, has added to it) row r
// against vector t. s is 256 floats of scratch. Its caller is attention
// over the f16 KV cache with 16 query or weight vectors (4 tokens of 4
// heads): each row's 16 weights are converted once (VCVTPH2PS) for all 16
// vectors, where f16x4Z converts them once per 4.
//
// Every sum is f16x4Z's, bit for bit, so a vector's result does not depend
// on which of the two kernels computed it (the engine's results do not
// depend on how a prompt is split into batches): the same FMA chain per
// lane over 16-element chunks (the last n%16 elements masked, the masked
// lanes left as they are where f16x4Z adds 0*0 to them: an accumulator
// that starts at +0 is never -0, so the two are the same), then the same
// tree over each accumulator's 16 lanes (lane i + lane i+8, then
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7))), here computed for the 16
// accumulators together by shuffles (REDUCE16) instead of f16x4Z's
// horizontal adds. A row's 16 sums land in one register, lane t for
// vector t; 16 rows of them are stored to s and transposed (TRANSPOSE16)
// into 16 registers, vector t's sums of the 16 rows, stored with a row mask.
//
// Registers: R14 the row, R15 the row stride in bytes; DI the vectors'
// chunk; R8 out at the row group; DX the rows left; R9 the row within the
// group; AX s; K1 the tail mask, K2 the row mask.

// XS is the bytes from one vector to the next: 4*f16x16Stride
// (avx512_amd64.go). A fixed stride lets every FMA address its vector by
// displacement: an indexed memory operand would not stay micro-fused.
#define XS 2112

// FMA16(F): the 16 FMAs of chunk Z16 against the 16 vectors' chunk in
// memory, by F: FMA, or FMAK (masked: masked lanes keep their sums).
#define FMA(m, z) VFMADD231PS m, Z16, z
#define FMAK(m, z) VFMADD231PS m, Z16, K1, z
#define FMA16(F) \
	F(0(DI), Z0) \
	F(XS(DI), Z1) \
	F(2*XS(DI), Z2) \
	F(3*XS(DI), Z3) \
	F(4*XS(DI), Z4) \
	F(5*XS(DI), Z5) \
	F(6*XS(DI), Z6) \
	F(7*XS(DI), Z7) \
	F(8*XS(DI), Z8) \
	F(9*XS(DI), Z9) \
	F(10*XS(DI), Z10) \
	F(11*XS(DI), Z11) \
	F(12*XS(DI), Z12) \
	F(13*XS(DI), Z13) \
	F(14*XS(DI), Z14) \
	F(15*XS(DI), Z15)

// HALVES(a, b, d): d = [a.L0+a.L2, a.L1+a.L3, b.L0+b.L2, b.L1+b.L3] (128-bit
// lanes): each accumulator's lane i + lane i+8, a's in the lower half.
#define HALVES(a, b, d) \
	VSHUFF32X4 $0x44, b, a, Z30 \
	VSHUFF32X4 $0xEE, b, a, Z31 \
	VADDPS Z31, Z30, d

// PAIRS(a, b, d): per 128-bit lane d = [a0+a1, a2+a3, b0+b1, b2+b3], as
// VHADDPS adds.
#define PAIRS(a, b, d) \
	VSHUFPS $0x88, b, a, Z30 \
	VSHUFPS $0xDD, b, a, Z31 \
	VADDPS Z31, Z30, d

// REDUCE16: Z0 = the 16 accumulators' sums, lane t accumulator t's. The
// first step pairs accumulators t and t+4 (t = 0-3, 8-11), so that after
// the last the sums are in order.
#define REDUCE16 \
	HALVES(Z0, Z4, Z16) \
	HALVES(Z1, Z5, Z17) \
	HALVES(Z2, Z6, Z18) \
	HALVES(Z3, Z7, Z19) \
	HALVES(Z8, Z12, Z20) \
	HALVES(Z9, Z13, Z21) \
	HALVES(Z10, Z14, Z22) \
	HALVES(Z11, Z15, Z23) \
	PAIRS(Z16, Z17, Z16) \
	PAIRS(Z18, Z19, Z18) \
	PAIRS(Z20, Z21, Z20) \
	PAIRS(Z22, Z23, Z22) \
	PAIRS(Z16, Z18, Z16) \
	PAIRS(Z20, Z22, Z20) \
	VSHUFF32X4 $0x88, Z20, Z16, Z30 \
	VSHUFF32X4 $0xDD, Z20, Z16, Z31 \
	VADDPS Z31, Z30, Z0

// LANES4(v0, v1, v2, v3, o0, o1, o2, o3): the 4x4 transpose of 128-bit
// lanes: ok = [v0.Lk, v1.Lk, v2.Lk, v3.Lk].
#define LANES4(v0, v1, v2, v3, o0, o1, o2, o3) \
	VSHUFF32X4 $0x44, v1, v0, Z28 \
	VSHUFF32X4 $0xEE, v1, v0, Z29 \
	VSHUFF32X4 $0x44, v3, v2, Z30 \
	VSHUFF32X4 $0xEE, v3, v2, Z31 \
	VSHUFF32X4 $0x88, Z30, Z28, o0 \
	VSHUFF32X4 $0xDD, Z30, Z28, o1 \
	VSHUFF32X4 $0x88, Z31, Z29, o2 \
	VSHUFF32X4 $0xDD, Z31, Z29, o3

// TRANSPOSE16: Z0-Z15 = the transpose of the 16x16 floats at (AX): Zt
// holds element t of rows 0-15.
#define TRANSPOSE16 \
	VMOVUPS (AX), Z0 \
	VMOVUPS 64(AX), Z1 \
	VMOVUPS 128(AX), Z2 \
	VMOVUPS 192(AX), Z3 \
	VMOVUPS 256(AX), Z4 \
	VMOVUPS 320(AX), Z5 \
	VMOVUPS 384(AX), Z6 \
	VMOVUPS 448(AX), Z7 \
	VMOVUPS 512(AX), Z8 \
	VMOVUPS 576(AX), Z9 \
	VMOVUPS 640(AX), Z10 \
	VMOVUPS 704(AX), Z11 \
	VMOVUPS 768(AX), Z12 \
	VMOVUPS 832(AX), Z13 \
	VMOVUPS 896(AX), Z14 \
	VMOVUPS 960(AX), Z15 \
	VUNPCKLPS Z1, Z0, Z16 \
	VUNPCKHPS Z1, Z0, Z17 \
	VUNPCKLPS Z3, Z2, Z18 \
	VUNPCKHPS Z3, Z2, Z19 \
	VUNPCKLPS Z5, Z4, Z20 \
	VUNPCKHPS Z5, Z4, Z21 \
	VUNPCKLPS Z7, Z6, Z22 \
	VUNPCKHPS Z7, Z6, Z23 \
	VUNPCKLPS Z9, Z8, Z24 \
	VUNPCKHPS Z9, Z8, Z25 \
	VUNPCKLPS Z11, Z10, Z26 \
	VUNPCKHPS Z11, Z10, Z27 \
	VUNPCKLPS Z13, Z12, Z0 \
	VUNPCKHPS Z13, Z12, Z1 \
	VUNPCKLPS Z15, Z14, Z2 \
	VUNPCKHPS Z15, Z14, Z3 \
	VUNPCKLPD Z18, Z16, Z4 \
	VUNPCKHPD Z18, Z16, Z5 \
	VUNPCKLPD Z19, Z17, Z6 \
	VUNPCKHPD Z19, Z17, Z7 \
	VUNPCKLPD Z22, Z20, Z8 \
	VUNPCKHPD Z22, Z20, Z9 \
	VUNPCKLPD Z23, Z21, Z10 \
	VUNPCKHPD Z23, Z21, Z11 \
	VUNPCKLPD Z26, Z24, Z12 \
	VUNPCKHPD Z26, Z24, Z13 \
	VUNPCKLPD Z27, Z25, Z14 \
	VUNPCKHPD Z27, Z25, Z15 \
	VUNPCKLPD Z2, Z0, Z16 \
	VUNPCKHPD Z2, Z0, Z17 \
	VUNPCKLPD Z3, Z1, Z18 \
	VUNPCKHPD Z3, Z1, Z19 \
	LANES4(Z4, Z8, Z12, Z16, Z0, Z20, Z24, Z1) \
	LANES4(Z5, Z9, Z13, Z17, Z2, Z21, Z25, Z3) \
	LANES4(Z6, Z10, Z14, Z18, Z22, Z26, Z27, Z23) \
	LANES4(Z7, Z11, Z15, Z19, Z4, Z5, Z6, Z7)

TEXT ·f16x16Z(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), R14
	MOVQ ws+8(FP), R15
	SHLQ $1, R15
	MOVQ rows+32(FP), DX
	MOVQ out+40(FP), R8
	MOVQ s+64(FP), AX
	MOVQ n+24(FP), CX
	ANDQ $15, CX
	MOVL $1, SI
	SHLL CX, SI
	DECL SI
	KMOVW SI, K1

group:
	TESTQ DX, DX
	JZ    done
	XORQ  R9, R9

row:
	MOVQ R14, SI
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
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

chunk:
	CMPQ CX, $16
	JB   tail
	VCVTPH2PS (SI), Z16
	PREFETCHT0 (SI)(R15*2)
	FMA16(FMA)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  chunk

tail:
	TESTQ CX, CX
	JZ    sum
	VCVTPH2PS.Z (SI), K1, Z16
	FMA16(FMAK)

sum:
	REDUCE16
	MOVQ   R9, CX
	SHLQ   $6, CX
	VMOVUPS Z0, (AX)(CX*1)
	ADDQ   R15, R14
	INCQ   R9
	CMPQ   R9, $16
	JEQ    put
	CMPQ   R9, DX
	JB     row

put:
	// R9 rows of the group are in s: vector t's sums to out[t*ldo], R9
	// floats (with acc, added to what is there).
	MOVQ  R9, CX
	MOVL  $1, SI
	SHLL  CX, SI
	DECL  SI
	KMOVW SI, K2
	TRANSPOSE16
	MOVQ  ldo+48(FP), CX
	SHLQ  $2, CX
	MOVQ  R8, SI
	CMPB  acc+56(FP), $0
	JEQ   store

	// Every output is read before any is written: with ldo = 0 they are
	// one place, as in f16x4Z.
	VADDPS.Z (SI), Z0, K2, Z0
	ADDQ CX, SI
	VADDPS.Z (SI), Z2, K2, Z2
	ADDQ CX, SI
	VADDPS.Z (SI), Z22, K2, Z22
	ADDQ CX, SI
	VADDPS.Z (SI), Z4, K2, Z4
	ADDQ CX, SI
	VADDPS.Z (SI), Z20, K2, Z20
	ADDQ CX, SI
	VADDPS.Z (SI), Z21, K2, Z21
	ADDQ CX, SI
	VADDPS.Z (SI), Z26, K2, Z26
	ADDQ CX, SI
	VADDPS.Z (SI), Z5, K2, Z5
	ADDQ CX, SI
	VADDPS.Z (SI), Z24, K2, Z24
	ADDQ CX, SI
	VADDPS.Z (SI), Z25, K2, Z25
	ADDQ CX, SI
	VADDPS.Z (SI), Z27, K2, Z27
	ADDQ CX, SI
	VADDPS.Z (SI), Z6, K2, Z6
	ADDQ CX, SI
	VADDPS.Z (SI), Z1, K2, Z1
	ADDQ CX, SI
	VADDPS.Z (SI), Z3, K2, Z3
	ADDQ CX, SI
	VADDPS.Z (SI), Z23, K2, Z23
	ADDQ CX, SI
	VADDPS.Z (SI), Z7, K2, Z7
	MOVQ R8, SI

store:
	// Vector t = 4k+e is LANES4 output k of e's call.
	VMOVUPS Z0, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z2, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z22, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z4, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z20, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z21, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z26, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z5, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z24, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z25, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z27, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z6, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z1, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z3, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z23, K2, (SI)
	ADDQ CX, SI
	VMOVUPS Z7, K2, (SI)
	ADDQ $64, R8
	SUBQ R9, DX
	JMP  group

done:
	VZEROUPPER
	RET
