//go:build !purego

#include "textflag.h"

// AVX-512 VNNI matrix-matrix kernel for the interleaved Q6_K layout
// (repack.go), organised like the Q4_K one (avx512_q4kx8_amd64.s): 16 rows
// (two 8-row groups) x a tile of tokens, four passes per super-block (half
// n of 128 weights, first or second pair of its 32-weight quarters), each
// unpacking 16 weight vectors once for every token of the tile. Weights
// stay unsigned (q+32, 0..63) for VPDPBUSD; the -32 is removed once per
// block as 32*sum_j sc_j*bsum_j (VPDPWSSD on the Q8_K bsums), and the
// 16-weight sub-block sums (|sum| <= 16*63*128, past 16 bits: the Q4_K
// kernel's pairs of steps do not fit) are scaled as dwords (VPMULLD), so
// every integer part is exact. Pass k of a half reads chunk 2n+k of the
// batch's token tiles (Q8KBatch.tiles), tokens in pairs; the block's D and
// bsums follow its chunks there.

DATA q6m0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL q6m0f<>(SB), RODATA|NOPTR, $4
DATA q6m30<>+0(SB)/4, $0x30303030
GLOBL q6m30<>(SB), RODATA|NOPTR, $4

// Q6MM_A(off, LO, HI): quarters 0 and 1 of step data at off(SI)
// of both groups: LO = (ql & 15) | (qh & 3) << 4, HI = (ql' & 15) |
// (qh >> 2 & 3) << 4; Q6MM_B the same for quarters 2 and 3 (high nibbles,
// qh bits 4-7). Z26, Z27, Z29, Z30 are temporaries, Z31 = 0x0f, Z28 = 0x30.
#define Q6MM_LOAD(off) \
	VMOVDQU32 off(SI), Y29 \
	VINSERTI64X4 $1, off(SI)(BX*1), Z29, Z29 \
	VMOVDQU32 (off+64)(SI), Y30 \
	VINSERTI64X4 $1, (off+64)(SI)(BX*1), Z30, Z30 \
	VMOVDQU32 (off+32)(SI), Y27 \
	VINSERTI64X4 $1, (off+32)(SI)(BX*1), Z27, Z27

#define Q6MM_A(off, LO, HI) \
	Q6MM_LOAD(off) \
	VPANDD Z31, Z29, LO \
	VPSLLW $4, Z30, Z26 \
	VPANDD Z28, Z26, Z26 \
	VPORD Z26, LO, LO \
	VPANDD Z31, Z27, HI \
	VPSLLW $2, Z30, Z26 \
	VPANDD Z28, Z26, Z26 \
	VPORD Z26, HI, HI

#define Q6MM_B(off, LO, HI) \
	Q6MM_LOAD(off) \
	VPSRLW $4, Z29, LO \
	VPANDD Z31, LO, LO \
	VPANDD Z28, Z30, Z26 \
	VPORD Z26, LO, LO \
	VPSRLW $4, Z27, HI \
	VPANDD Z31, HI, HI \
	VPSRLW $2, Z30, Z26 \
	VPANDD Z28, Z26, Z26 \
	VPORD Z26, HI, HI

#define Q6MM_UNPACK(U) \
	U(0, Z0, Z1) \
	U(96, Z2, Z3) \
	U(192, Z4, Z5) \
	U(288, Z6, Z7) \
	U(384, Z8, Z9) \
	U(480, Z10, Z11) \
	U(576, Z12, Z13) \
	U(672, Z14, Z15)

// Q6MM_SC(j, R): R = the int8 scales j of the 16 rows as dwords.
#define Q6MM_SC(j, R) \
	VMOVQ (16+8*(j))(R11), X26 \
	VPINSRQ $1, (16+8*(j))(R11)(BX*1), X26, X26 \
	VPMOVSXBD X26, R

// Q6MM_TOK(off, A0, A1, A2, A3): the 16 products of the token whose
// activation quarter is at off(AX) (the next quarter 32 bytes on), scaled
// into its integer sum at off(R10).
#define Q6MM_TOK(off, A0, A1, A2, A3) \
	VPXORD A0, A0, A0 \
	VPXORD A1, A1, A1 \
	VPXORD A2, A2, A2 \
	VPXORD A3, A3, A3 \
	VPDPBUSD.BCST (off)(AX), Z0, A0 \
	VPDPBUSD.BCST (off+32)(AX), Z1, A2 \
	VPDPBUSD.BCST (off+16)(AX), Z8, A1 \
	VPDPBUSD.BCST (off+48)(AX), Z9, A3 \
	VPDPBUSD.BCST (off+4)(AX), Z2, A0 \
	VPDPBUSD.BCST (off+36)(AX), Z3, A2 \
	VPDPBUSD.BCST (off+20)(AX), Z10, A1 \
	VPDPBUSD.BCST (off+52)(AX), Z11, A3 \
	VPDPBUSD.BCST (off+8)(AX), Z4, A0 \
	VPDPBUSD.BCST (off+40)(AX), Z5, A2 \
	VPDPBUSD.BCST (off+24)(AX), Z12, A1 \
	VPDPBUSD.BCST (off+56)(AX), Z13, A3 \
	VPDPBUSD.BCST (off+12)(AX), Z6, A0 \
	VPDPBUSD.BCST (off+44)(AX), Z7, A2 \
	VPDPBUSD.BCST (off+28)(AX), Z14, A1 \
	VPDPBUSD.BCST (off+60)(AX), Z15, A3 \
	VPMULLD Z16, A0, A0 \
	VPMULLD Z17, A1, A1 \
	VPMULLD Z18, A2, A2 \
	VPMULLD Z19, A3, A3 \
	VPADDD A1, A0, A0 \
	VPADDD A3, A2, A2 \
	VPADDD (off)(R10), A0, A0 \
	VPADDD A2, A0, A0 \
	VMOVDQU32 A0, (off)(R10)

// Q6MM_PAIR(k, R): R = the words [sc_2k[r], sc_2k+1[r]] of the 16 rows.
#define Q6MM_PAIR(k, R) \
	VMOVQ (16+16*(k))(R11), X26 \
	VPINSRQ $1, (16+16*(k))(R11)(BX*1), X26, X26 \
	VMOVQ (24+16*(k))(R11), X27 \
	VPINSRQ $1, (24+16*(k))(R11)(BX*1), X27, X27 \
	VPUNPCKHBW X27, X26, X28 \
	VPUNPCKLBW X27, X26, X26 \
	VINSERTI32X4 $1, X28, Y26, Y26 \
	VPMOVSXBW Y26, R

// func q6kx8mmAVX512(p *x8mmArgs)
//
// Scratch (R14): 256+64t the integer block sum of token t, 4352+64t its
// float sum. The bs field is unused (the kernel reads the Q8_K bsums).
TEXT ·q6kx8mmAVX512(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ 0(R8), R11
	MOVQ 8(R8), BX
	MOVQ 16(R8), DI
	MOVQ 24(R8), R9
	MOVQ 72(R8), R14

	VPXORD Z0, Z0, Z0
	MOVQ 48(R8), CX
	LEAQ 256(R14), R10

q6zero:
	VMOVDQU32 Z0, (R10)
	VMOVDQU32 Z0, 4096(R10)
	ADDQ $64, R10
	DECQ CX
	JNZ  q6zero
	MOVQ 40(R8), DX

q6block:
	LEAQ 144(R11), SI
	MOVQ R11, R12
	MOVQ DI, R13
	VPBROADCASTD q6m0f<>(SB), Z31
	VPBROADCASTD q6m30<>(SB), Z28

q6half:
	// Quarters 0 and 1 (scales 8n..8n+3).
	Q6MM_UNPACK(Q6MM_A)
	Q6MM_SC(0, Z16)
	Q6MM_SC(1, Z17)
	Q6MM_SC(2, Z18)
	Q6MM_SC(3, Z19)
	MOVQ R13, AX
	LEAQ 256(R14), R10
	MOVQ 48(R8), CX

	SHRQ $1, CX
	JZ   q6tokA1

q6tokA:
	Q6MM_TOK(0, Z20, Z21, Z22, Z23)
	Q6MM_TOK(64, Z24, Z25, Z26, Z27)
	ADDQ $128, AX
	ADDQ $128, R10
	DECQ CX
	JNZ  q6tokA

q6tokA1:
	TESTQ $1, 48(R8)
	JZ    q6tokAs
	Q6MM_TOK(0, Z20, Z21, Z22, Z23)

q6tokAs:

	// Quarters 2 and 3 (scales 8n+4..8n+7).
	Q6MM_UNPACK(Q6MM_B)
	Q6MM_SC(4, Z16)
	Q6MM_SC(5, Z17)
	Q6MM_SC(6, Z18)
	Q6MM_SC(7, Z19)
	LEAQ (R13)(R9*1), AX
	LEAQ 256(R14), R10
	MOVQ 48(R8), CX

	SHRQ $1, CX
	JZ   q6tokB1

q6tokB:
	Q6MM_TOK(0, Z20, Z21, Z22, Z23)
	Q6MM_TOK(64, Z24, Z25, Z26, Z27)
	ADDQ $128, AX
	ADDQ $128, R10
	DECQ CX
	JNZ  q6tokB

q6tokB1:
	TESTQ $1, 48(R8)
	JZ    q6tokBs
	Q6MM_TOK(0, Z20, Z21, Z22, Z23)

q6tokBs:

	ADDQ $768, SI
	LEAQ (R13)(R9*2), R13
	ADDQ $64, R11
	MOVQ R11, CX
	SUBQ R12, CX
	CMPQ CX, $64
	JEQ  q6half
	MOVQ R12, R11

	// Per token: fsum += d*D*(isum - 32*sum_j sc_j*bsum_j); isum = 0.
	VMOVDQU32 0(R11), X26
	VINSERTI32X4 $1, 0(R11)(BX*1), Y26, Y26
	VCVTPH2PS Y26, Z24
	Q6MM_PAIR(0, Z0)
	Q6MM_PAIR(1, Z1)
	Q6MM_PAIR(2, Z2)
	Q6MM_PAIR(3, Z3)
	Q6MM_PAIR(4, Z4)
	Q6MM_PAIR(5, Z5)
	Q6MM_PAIR(6, Z6)
	Q6MM_PAIR(7, Z7)
	VPXORD Z8, Z8, Z8
	// The tile's scales D at 4*R9 from the block, its bsums 4*ntok on.
	LEAQ (DI)(R9*4), AX
	MOVQ 48(R8), CX
	LEAQ (AX)(CX*4), R12
	LEAQ 256(R14), R10

q6fin:
	VPXORD Z20, Z20, Z20
	VPDPWSSD.BCST 0(R12), Z0, Z20
	VPDPWSSD.BCST 4(R12), Z1, Z20
	VPDPWSSD.BCST 8(R12), Z2, Z20
	VPDPWSSD.BCST 12(R12), Z3, Z20
	VPDPWSSD.BCST 16(R12), Z4, Z20
	VPDPWSSD.BCST 20(R12), Z5, Z20
	VPDPWSSD.BCST 24(R12), Z6, Z20
	VPDPWSSD.BCST 28(R12), Z7, Z20
	VPSLLD $5, Z20, Z20
	VMOVDQU32 (R10), Z21
	VPSUBD Z20, Z21, Z21
	VCVTDQ2PS Z21, Z21
	VMULPS.BCST (AX), Z24, Z22
	VMOVUPS 4096(R10), Z23
	VFMADD231PS Z21, Z22, Z23
	VMOVUPS Z23, 4096(R10)
	VMOVDQU32 Z8, (R10)
	ADDQ $4, AX
	ADDQ $32, R12
	ADDQ $64, R10
	DECQ CX
	JNZ  q6fin

	// The next block of the tile (292 bytes a token).
	ADDQ $1680, R11
	MOVQ 48(R8), AX
	IMUL3Q $292, AX, AX
	ADDQ AX, DI
	DECQ DX
	JNZ  q6block

	MOVQ 56(R8), AX
	MOVQ 64(R8), R9
	LEAQ 4352(R14), R10
	MOVQ 48(R8), CX

q6store:
	VMOVUPS (R10), Z0
	VMOVUPS Z0, (AX)
	ADDQ R9, AX
	ADDQ $64, R10
	DECQ CX
	JNZ  q6store
	VZEROUPPER
	RET

// Q6PK(src, dst): the dword at src of the 16 rows' blocks (gathered), rows
// 0-7 to dst in group 0, rows 8-15 to dst in group 1 (DX bytes on).
#define Q6PK(src, dst) \
	KXNORW K0, K0, K1 \
	VPGATHERDD (src)(SI)(Z30*1), K1, Z0 \
	VMOVDQU32 Y0, (dst)(DI) \
	VEXTRACTI64X4 $1, Z0, (dst)(DI)(DX*1)

// Q6PKSTEP(n, i): step i of half n: ql[64n+4i], ql[64n+32+4i], qh[32n+4i].
#define Q6PKSTEP(n, i) \
	Q6PK(64*(n)+4*(i), 144+768*(n)+96*(i)) \
	Q6PK(64*(n)+32+4*(i), 144+768*(n)+96*(i)+32) \
	Q6PK(128+32*(n)+4*(i), 144+768*(n)+96*(i)+64)

#define Q6PKSC(k, SH) \
	VPSRLD $(SH), Z1, Z3 \
	VPMOVDB Z3, X3 \
	VMOVQ X3, (16+8*(k))(DI) \
	VPEXTRQ $1, X3, (16+8*(k))(DI)(DX*1)

#define Q6PKSC4(m) \
	KXNORW K0, K0, K1 \
	VPGATHERDD (192+4*(m))(SI)(Z30*1), K1, Z1 \
	Q6PKSC(4*(m), 0) \
	Q6PKSC(4*(m)+1, 8) \
	Q6PKSC(4*(m)+2, 16) \
	Q6PKSC(4*(m)+3, 24)

// func q6kPackZ(src *byte, idx *int32, nb int, dst *byte, gstride int)
//
// q4kPackZ for Q6_K: packGroupQ6K for the two groups of 16 rows.
TEXT ·q6kPackZ(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), SI
	MOVQ idx+8(FP), AX
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	MOVQ gstride+32(FP), DX
	VMOVDQU32 (AX), Z30

q6pk:
	// d is the high word of the dword at 206 (the dword at 208 would
	// read past the block).
	KXNORW K0, K0, K1
	VPGATHERDD 206(SI)(Z30*1), K1, Z1
	VPSRLD $16, Z1, Z1
	VPMOVDW Z1, Y2
	VMOVDQU X2, 0(DI)
	VEXTRACTI128 $1, Y2, 0(DI)(DX*1)
	Q6PKSC4(0)
	Q6PKSC4(1)
	Q6PKSC4(2)
	Q6PKSC4(3)
	Q6PKSTEP(0, 0)
	Q6PKSTEP(0, 1)
	Q6PKSTEP(0, 2)
	Q6PKSTEP(0, 3)
	Q6PKSTEP(0, 4)
	Q6PKSTEP(0, 5)
	Q6PKSTEP(0, 6)
	Q6PKSTEP(0, 7)
	Q6PKSTEP(1, 0)
	Q6PKSTEP(1, 1)
	Q6PKSTEP(1, 2)
	Q6PKSTEP(1, 3)
	Q6PKSTEP(1, 4)
	Q6PKSTEP(1, 5)
	Q6PKSTEP(1, 6)
	Q6PKSTEP(1, 7)
	ADDQ $210, SI
	ADDQ $1680, DI
	DECQ CX
	JNZ  q6pk
	VZEROUPPER
	RET
