//go:build !purego

#include "textflag.h"

// Kernels for the interleaved Q6_K layout (repack.go): 8 rows per group,
// each 32-byte load holding 4 consecutive ql (or qh) bytes of every row.

DATA x6b0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL x6b0f<>(SB), RODATA|NOPTR, $4
DATA x6b30<>+0(SB)/4, $0x30303030
GLOBL x6b30<>(SB), RODATA|NOPTR, $4

// x6il interleaves two 8-byte halves: [a0 b0 a1 b1 ... a7 b7].
DATA x6il<>+0(SB)/8, $0x0b030a0209010800
DATA x6il<>+8(SB)/8, $0x0f070e060d050c04
GLOBL x6il<>(SB), RODATA|NOPTR, $16

// Q6KX8_UNPACK(o, Q2, T): the 6-bit quants (0..63) of step o of the group
// block at SI, 4 per row for 8 rows: Y3 = q1 (weights l), Q2 = q2 (l+32),
// Y0 = q3 (l+64), Y1 = q4 (l+96); Y2 and T are clobbered. Y15 = 0x0f bytes,
// Y14 = 0x30. 16-bit shifts move bits across bytes only where the masks
// clear them.
#define Q6KX8_UNPACK(o, Q2, T) \
	VMOVDQU (o)(SI), Y0 \
	VMOVDQU ((o)+32)(SI), Y1 \
	VMOVDQU ((o)+64)(SI), Y2 \
	VPAND Y15, Y0, Y3 \
	VPSLLW $4, Y2, T \
	VPAND Y14, T, T \
	VPOR T, Y3, Y3 \
	VPAND Y15, Y1, Q2 \
	VPSLLW $2, Y2, T \
	VPAND Y14, T, T \
	VPOR T, Q2, Q2 \
	VPSRLW $4, Y0, Y0 \
	VPAND Y15, Y0, Y0 \
	VPAND Y14, Y2, T \
	VPOR T, Y0, Y0 \
	VPSRLW $4, Y1, Y1 \
	VPAND Y15, Y1, Y1 \
	VPSRLW $2, Y2, Y2 \
	VPAND Y14, Y2, Y2 \
	VPOR Y2, Y1, Y1

// Q6KX8_PF(n, i): prefetch step i of half n of the group block X6PF bytes
// ahead (see Q4KX8_PF; here two threads stream ~30 % faster with it).
#define Q6KX8_PF(n, i) \
	X6PFI (X6PF+144+768*(n)+96*(i))(SI) \
	X6PFI (X6PF+208+768*(n)+96*(i))(SI)

// Q6KX8_FIRST(n, i) / Q6KX8_NEXT(n, i): step i of half n, products as
// 16-bit words set into (FIRST) or added to (NEXT) Y4, Y5, Y6, Y10. Two
// steps fit: 2 x 2 x 63 x 127 < 2^15 (Q8_K quants are in [-127, 127]).
#define Q6KX8_FIRST(n, i) \
	Q6KX8_PF(n, i) \
	Q6KX8_UNPACK(144+768*(n)+96*(i), Y8, Y7) \
	VPBROADCASTD (4+128*(n)+4*(i))(DI), Y7 \
	VPMADDUBSW Y7, Y3, Y4 \
	VPBROADCASTD (36+128*(n)+4*(i))(DI), Y7 \
	VPMADDUBSW Y7, Y8, Y5 \
	VPBROADCASTD (68+128*(n)+4*(i))(DI), Y7 \
	VPMADDUBSW Y7, Y0, Y6 \
	VPBROADCASTD (100+128*(n)+4*(i))(DI), Y7 \
	VPMADDUBSW Y7, Y1, Y10

#define Q6KX8_NEXT(n, i) \
	Q6KX8_PF(n, i) \
	Q6KX8_UNPACK(144+768*(n)+96*(i), Y8, Y7) \
	VPBROADCASTD (4+128*(n)+4*(i))(DI), Y7 \
	VPMADDUBSW Y7, Y3, Y3 \
	VPADDW Y3, Y4, Y4 \
	VPBROADCASTD (36+128*(n)+4*(i))(DI), Y7 \
	VPMADDUBSW Y7, Y8, Y8 \
	VPADDW Y8, Y5, Y5 \
	VPBROADCASTD (68+128*(n)+4*(i))(DI), Y7 \
	VPMADDUBSW Y7, Y0, Y0 \
	VPADDW Y0, Y6, Y6 \
	VPBROADCASTD (100+128*(n)+4*(i))(DI), Y7 \
	VPMADDUBSW Y7, Y1, Y1 \
	VPADDW Y1, Y10, Y10

// Q6KX8_SCALE(s, slot): the int8 scales s of the 8 rows as words
// [s_r, s_r] (row r's two product words) at slot(SP).
#define Q6KX8_SCALE(s, slot) \
	VMOVQ (16+8*(s))(SI), X0 \
	VPUNPCKLBW X0, X0, X0 \
	VPMOVSXBW X0, Y0 \
	VMOVDQU Y0, (slot)(SP)

// Q6KX8_APPLY: Y12 += the four 16-bit sums times their scales.
#define Q6KX8_APPLY \
	VPMADDWD 0(SP), Y4, Y4 \
	VPMADDWD 32(SP), Y5, Y5 \
	VPMADDWD 64(SP), Y6, Y6 \
	VPMADDWD 96(SP), Y10, Y10 \
	VPADDD Y4, Y5, Y5 \
	VPADDD Y6, Y10, Y10 \
	VPADDD Y5, Y12, Y12 \
	VPADDD Y10, Y12, Y12

// Q6KX8_GROUP(n, is): the 16-weight scale groups 8n+is+{0,2,4,6}, steps
// 4is..4is+3 of half n.
#define Q6KX8_GROUP(n, is) \
	Q6KX8_SCALE(8*(n)+(is), 0) \
	Q6KX8_SCALE(8*(n)+(is)+2, 32) \
	Q6KX8_SCALE(8*(n)+(is)+4, 64) \
	Q6KX8_SCALE(8*(n)+(is)+6, 96) \
	Q6KX8_FIRST(n, 4*(is)) \
	Q6KX8_NEXT(n, 4*(is)+1) \
	Q6KX8_APPLY \
	Q6KX8_FIRST(n, 4*(is)+2) \
	Q6KX8_NEXT(n, 4*(is)+3) \
	Q6KX8_APPLY

// Q6KX8_CORR(s): Y1 = sc_s[r]*bsum_s + sc_s+1[r]*bsum_s+1 per row (s even):
// the scale group s is exactly the activation's 16-sum s.
#define Q6KX8_CORR(s) \
	VMOVDQU (16+8*(s))(SI), X1 \
	VPSHUFB x6il<>(SB), X1, X1 \
	VPMOVSXBW X1, Y1 \
	VPBROADCASTD (260+2*(s))(DI), Y2 \
	VPMADDWD Y2, Y1, Y1

// Q6KX8_BLOCK: Y13 += d*D*isum of the 8 rows' group block at SI with the
// activation block at DI, the -32 offset removed once as 32 *
// sum(scale * bsum) (Y11, then Y12 the integer sum). Uses Y0-Y12 and the
// frame's bytes 0-127; prefetches with X6PFI, X6PF bytes ahead.
#define Q6KX8_BLOCK \
	X6PFI X6PF(SI) \
	X6PFI (X6PF+64)(SI) \
	X6PFI (X6PF+128)(SI) \
	Q6KX8_CORR(0) \
	VMOVDQA Y1, Y11 \
	Q6KX8_CORR(2) \
	VPADDD Y1, Y11, Y11 \
	Q6KX8_CORR(4) \
	VPADDD Y1, Y11, Y11 \
	Q6KX8_CORR(6) \
	VPADDD Y1, Y11, Y11 \
	Q6KX8_CORR(8) \
	VPADDD Y1, Y11, Y11 \
	Q6KX8_CORR(10) \
	VPADDD Y1, Y11, Y11 \
	Q6KX8_CORR(12) \
	VPADDD Y1, Y11, Y11 \
	Q6KX8_CORR(14) \
	VPADDD Y1, Y11, Y11 \
	VPSLLD $5, Y11, Y11 \
	VPXOR Y12, Y12, Y12 \
	VPSUBD Y11, Y12, Y12 \
	Q6KX8_GROUP(0, 0) \
	Q6KX8_GROUP(0, 1) \
	Q6KX8_GROUP(1, 0) \
	Q6KX8_GROUP(1, 1) \
	VBROADCASTSS 0(DI), Y1 \
	VCVTPH2PS 0(SI), Y0 \
	VMULPS Y1, Y0, Y0 \
	VCVTDQ2PS Y12, Y12 \
	VFMADD231PS Y12, Y0, Y13

// func q6kx8AVX2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)
//
// Prefetching into L1, 4 KiB ahead.
#define X6PFI PREFETCHT0
#define X6PF 4096
TEXT ·q6kx8AVX2(SB), NOSPLIT, $128-40
#include "q6kx8one_amd64.h"
#undef X6PFI
#undef X6PF

// func q6kx8AVX2L2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)
//
// q6kx8AVX2 with its prefetches into L2, 3 KiB ahead (Intel cores: see
// l2Prefetch in cpu_amd64.go).
#define X6PFI PREFETCHT1
#define X6PF 3072
TEXT ·q6kx8AVX2L2(SB), NOSPLIT, $128-40
#include "q6kx8one_amd64.h"

// func q6kx8AVX2L2h2(w *byte, a *quant.BlockQ8K, nb, half int, out *float32)
//
// q6kx8AVX2L2 over groups g and g+half together, block by block (two
// weight streams per thread, as q4kx8AVX2L2h2). R10 = the bytes from group
// g to group g+half, R11 = the bytes between their outputs; the second
// group's sum waits at 128(SP) while the first one's is in Y13.
TEXT ·q6kx8AVX2L2h2(SB), NOSPLIT, $192-40
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ half+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ nb+16(FP), R10
	IMULQ $1680, R10
	IMULQ DX, R10
	MOVQ DX, R11
	SHLQ $5, R11
	VPBROADCASTD x6b0f<>(SB), Y15
	VPBROADCASTD x6b30<>(SB), Y14

x6h2group:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y13, Y13, Y13
	VMOVUPS Y13, 128(SP)

x6h2block:
	Q6KX8_BLOCK
	VMOVUPS Y13, 160(SP)
	VMOVUPS 128(SP), Y13
	ADDQ R10, SI
	Q6KX8_BLOCK
	SUBQ R10, SI
	VMOVUPS Y13, 128(SP)
	VMOVUPS 160(SP), Y13
	ADDQ $1680, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  x6h2block

	VMOVUPS Y13, (R8)
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (R8)(R11*1)
	ADDQ $32, R8
	DECQ DX
	JNZ  x6h2group
	VZEROUPPER
	RET
#undef X6PFI
#undef X6PF

// The 4-token kernel (prefill): each step is unpacked once for 4
// activation vectors (blocks at DI, AX, BX, R12); with 4 tokens the 16-bit
// sums cannot stay in registers, so every product is scaled at once into
// the tokens' 32-bit sums Y4-Y7. Float sums in Y10-Y13. Frame: 0-127 the
// current scale vectors, 128-383 the scale pair words of the correction.

#define Q6KX8X4_TOK(n, i, P, ACC) \
	VPBROADCASTD (4+128*(n)+4*(i))(P), Y2 \
	VPMADDUBSW Y2, Y3, Y2 \
	VPMADDWD 0(SP), Y2, Y2 \
	VPADDD Y2, ACC, ACC \
	VPBROADCASTD (36+128*(n)+4*(i))(P), Y8 \
	VPMADDUBSW Y8, Y9, Y8 \
	VPMADDWD 32(SP), Y8, Y8 \
	VPADDD Y8, ACC, ACC \
	VPBROADCASTD (68+128*(n)+4*(i))(P), Y2 \
	VPMADDUBSW Y2, Y0, Y2 \
	VPMADDWD 64(SP), Y2, Y2 \
	VPADDD Y2, ACC, ACC \
	VPBROADCASTD (100+128*(n)+4*(i))(P), Y8 \
	VPMADDUBSW Y8, Y1, Y8 \
	VPMADDWD 96(SP), Y8, Y8 \
	VPADDD Y8, ACC, ACC

#define Q6KX8X4_STEP(n, i) \
	Q6KX8_UNPACK(144+768*(n)+96*(i), Y9, Y8) \
	Q6KX8X4_TOK(n, i, DI, Y4) \
	Q6KX8X4_TOK(n, i, AX, Y5) \
	Q6KX8X4_TOK(n, i, BX, Y6) \
	Q6KX8X4_TOK(n, i, R12, Y7)

#define Q6KX8X4_GROUP(n, is) \
	Q6KX8_SCALE(8*(n)+(is), 0) \
	Q6KX8_SCALE(8*(n)+(is)+2, 32) \
	Q6KX8_SCALE(8*(n)+(is)+4, 64) \
	Q6KX8_SCALE(8*(n)+(is)+6, 96) \
	Q6KX8X4_STEP(n, 4*(is)) \
	Q6KX8X4_STEP(n, 4*(is)+1) \
	Q6KX8X4_STEP(n, 4*(is)+2) \
	Q6KX8X4_STEP(n, 4*(is)+3)

// Q6KX8X4_PAIR(s): the words [sc_s[r], sc_s+1[r]] at 128+16s(SP) (s even).
#define Q6KX8X4_PAIR(s) \
	VMOVDQU (16+8*(s))(SI), X8 \
	VPSHUFB x6il<>(SB), X8, X8 \
	VPMOVSXBW X8, Y8 \
	VMOVDQU Y8, (128+16*(s))(SP)

#define Q6KX8X4_CTERM(s, P, ACC) \
	VPBROADCASTD (260+2*(s))(P), Y2 \
	VPMADDWD (128+16*(s))(SP), Y2, Y2 \
	VPADDD Y2, ACC, ACC

// Q6KX8X4_CORR(P, ACC): ACC = -32 * sum_s sc_s * bsum_s for the token at P.
#define Q6KX8X4_CORR(P, ACC) \
	VPBROADCASTD 260(P), Y2 \
	VPMADDWD 128(SP), Y2, ACC \
	Q6KX8X4_CTERM(2, P, ACC) \
	Q6KX8X4_CTERM(4, P, ACC) \
	Q6KX8X4_CTERM(6, P, ACC) \
	Q6KX8X4_CTERM(8, P, ACC) \
	Q6KX8X4_CTERM(10, P, ACC) \
	Q6KX8X4_CTERM(12, P, ACC) \
	Q6KX8X4_CTERM(14, P, ACC) \
	VPSLLD $5, ACC, ACC \
	VPXOR Y8, Y8, Y8 \
	VPSUBD ACC, Y8, ACC

// Q6KX8X4_FINISH(P, ACC, FACC): FACC += d*D*isum, d in Y3.
#define Q6KX8X4_FINISH(P, ACC, FACC) \
	VCVTDQ2PS ACC, ACC \
	VBROADCASTSS (P), Y2 \
	VMULPS Y3, Y2, Y2 \
	VFMADD231PS ACC, Y2, FACC

// func q6kx8AVX2x4(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32, ldo int)
TEXT ·q6kx8AVX2x4(SB), NOSPLIT, $384-48
	MOVQ w+0(FP), SI
	MOVQ nb+16(FP), R9
	IMULQ $292, R9
	MOVQ groups+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ ldo+40(FP), R11
	SHLQ $2, R11
	VPBROADCASTD x6b0f<>(SB), Y15
	VPBROADCASTD x6b30<>(SB), Y14

x6x4group:
	MOVQ a+8(FP), DI
	LEAQ (DI)(R9*1), AX
	LEAQ (DI)(R9*2), BX
	LEAQ (AX)(R9*2), R12
	MOVQ nb+16(FP), CX
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13

x6x4block:
	Q6KX8X4_PAIR(0)
	Q6KX8X4_PAIR(2)
	Q6KX8X4_PAIR(4)
	Q6KX8X4_PAIR(6)
	Q6KX8X4_PAIR(8)
	Q6KX8X4_PAIR(10)
	Q6KX8X4_PAIR(12)
	Q6KX8X4_PAIR(14)
	Q6KX8X4_CORR(DI, Y4)
	Q6KX8X4_CORR(AX, Y5)
	Q6KX8X4_CORR(BX, Y6)
	Q6KX8X4_CORR(R12, Y7)

	Q6KX8X4_GROUP(0, 0)
	Q6KX8X4_GROUP(0, 1)
	Q6KX8X4_GROUP(1, 0)
	Q6KX8X4_GROUP(1, 1)

	VCVTPH2PS 0(SI), Y3
	Q6KX8X4_FINISH(DI, Y4, Y10)
	Q6KX8X4_FINISH(AX, Y5, Y11)
	Q6KX8X4_FINISH(BX, Y6, Y12)
	Q6KX8X4_FINISH(R12, Y7, Y13)

	ADDQ $1680, SI
	ADDQ $292, DI
	ADDQ $292, AX
	ADDQ $292, BX
	ADDQ $292, R12
	DECQ CX
	JNZ  x6x4block

	VMOVUPS Y10, (R8)
	VMOVUPS Y11, (R8)(R11*1)
	VMOVUPS Y12, (R8)(R11*2)
	LEAQ (R8)(R11*2), AX
	VMOVUPS Y13, (AX)(R11*1)
	ADDQ $32, R8
	DECQ DX
	JNZ  x6x4group
	VZEROUPPER
	RET
