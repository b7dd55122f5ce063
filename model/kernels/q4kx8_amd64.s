//go:build !purego

#include "textflag.h"

// Kernels for the interleaved Q4_K layout (repack.go): 8 rows per group,
// each 32-byte weight load holding 4 consecutive quants of every row.

// x8sc: after VPBROADCASTQ of 8 row scales (bytes), turns them into the
// 16-bit words [s_r, s_r] of row r's two product words (rows 0-3 in the low
// lane, 4-7 in the high lane).
DATA x8sc<>+0(SB)/8, $0x8001800180008000
DATA x8sc<>+8(SB)/8, $0x8003800380028002
DATA x8sc<>+16(SB)/8, $0x8005800580048004
DATA x8sc<>+24(SB)/8, $0x8007800780068006
GLOBL x8sc<>(SB), RODATA|NOPTR, $32

// x8il interleaves two 8-byte halves: [a0 b0 a1 b1 ... a7 b7].
DATA x8il<>+0(SB)/8, $0x0b030a0209010800
DATA x8il<>+8(SB)/8, $0x0f070e060d050c04
GLOBL x8il<>(SB), RODATA|NOPTR, $16

DATA x8b0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL x8b0f<>(SB), RODATA|NOPTR, $4
DATA x8b3f<>+0(SB)/4, $0x3f3f3f3f
GLOBL x8b3f<>(SB), RODATA|NOPTR, $4
DATA x8b30<>+0(SB)/4, $0x30303030
GLOBL x8b30<>(SB), RODATA|NOPTR, $4

// Q4KX8_SCALES(M3F, M30) unpacks the 6-bit scales and mins of the group
// block at SI for all 8 rows and stores sc_j (row r at byte r) at 0+8j(SP)
// and m_j at 64+8j(SP). Uses Y0-Y8; Y15 = 0x0f bytes, M3F = 0x3f, M30 = 0x30.
//   sc0-3 = s0-3 & 63    sc4-7 = (s8-11 & 15) | (s0-3 >> 6) << 4
//   m0-3  = s4-7 & 63    m4-7  = (s8-11 >> 4) | (s4-7 >> 6) << 4
// (16-bit shifts move bits across bytes only where the masks clear them.)
#define Q4KX8_SCALES(M3F, M30) \
	VMOVDQU 32(SI), Y0 \
	VMOVDQU 64(SI), Y1 \
	VMOVDQU 96(SI), Y2 \
	VPAND M3F, Y0, Y4 \
	VPAND M3F, Y1, Y5 \
	VPSRLW $2, Y0, Y6 \
	VPAND M30, Y6, Y6 \
	VPAND Y15, Y2, Y7 \
	VPOR Y6, Y7, Y7 \
	VPSRLW $2, Y1, Y6 \
	VPAND M30, Y6, Y6 \
	VPSRLW $4, Y2, Y8 \
	VPAND Y15, Y8, Y8 \
	VPOR Y6, Y8, Y8 \
	VMOVDQU Y4, 0(SP) \
	VMOVDQU Y7, 32(SP) \
	VMOVDQU Y5, 64(SP) \
	VMOVDQU Y8, 96(SP)

// Q4KX8_MINPAIR(p, BS): Y1 = m_2p[r]*bs_2p + m_2p+1[r]*bs_2p+1 per row,
// with the activation's sums of 32 (as 16-bit words) at BS(SP).
#define Q4KX8_MINPAIR(p, BS) \
	VMOVDQU (64+16*p)(SP), X1 \
	VPSHUFB x8il<>(SB), X1, X1 \
	VPMOVZXBW X1, Y1 \
	VPBROADCASTD (BS+4*p)(SP), Y2 \
	VPMADDWD Y2, Y1, Y1

// Q4KX8_STEP(p, i): the 64 products of step i of chunk p for 8 rows,
// summed as 16-bit words into Y4 (sub-block 2p) and Y5 (sub-block 2p+1).
#define Q4KX8_STEP(p, i) \
	VMOVDQU (128+256*p+32*i)(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y15, Y0, Y0 \
	VPAND Y15, Y1, Y1 \
	VPBROADCASTD (4+64*p+4*i)(DI), Y2 \
	VPBROADCASTD (36+64*p+4*i)(DI), Y3 \
	VPMADDUBSW Y2, Y0, Y0 \
	VPMADDUBSW Y3, Y1, Y1 \
	VPADDW Y0, Y4, Y4 \
	VPADDW Y1, Y5, Y5

#define Q4KX8_STEP0(p) \
	VMOVDQU (128+256*p)(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y15, Y0, Y0 \
	VPAND Y15, Y1, Y1 \
	VPBROADCASTD (4+64*p)(DI), Y2 \
	VPBROADCASTD (36+64*p)(DI), Y3 \
	VPMADDUBSW Y2, Y0, Y4 \
	VPMADDUBSW Y3, Y1, Y5

// Q4KX8_PF(p): prefetch the 4 cache lines of chunk p of the group block
// X8PF bytes ahead with X8PFI. The weights are one sequential stream per
// thread, and the hardware prefetchers alone keep too few misses in flight
// for it: measured with BenchmarkStreamRead on the 2-core Zen 3, 4 KiB ahead
// into L1 gives two threads ~15 % more bandwidth (1-2 KiB ahead gave
// nothing reliable). On an Intel core the same prefetches hold L1's few
// fill buffers until the line arrives; into L2 (PREFETCHT1) 8 KiB ahead,
// two threads stream 4-10 % faster (Emerald Rapids, PERFORMANCE.md), and
// with two streams per thread (q4kx8AVX2L2h2) 3 KiB ahead is faster still
// (Sapphire Rapids).
#define Q4KX8_PF(p) \
	X8PFI (X8PF+128+256*(p))(SI) \
	X8PFI (X8PF+192+256*(p))(SI) \
	X8PFI (X8PF+256+256*(p))(SI) \
	X8PFI (X8PF+320+256*(p))(SI)

// Q4KX8_CHUNK(p): Y12 (+)= the scaled sums of sub-blocks 2p and 2p+1. The
// 16-bit sums of a sub-block (8 steps x 2 products of 15 x 128 at most)
// cannot overflow.
#define Q4KX8_CHUNK(p) \
	Q4KX8_PF(p) \
	Q4KX8_STEP0(p) \
	Q4KX8_STEP(p, 1) \
	Q4KX8_STEP(p, 2) \
	Q4KX8_STEP(p, 3) \
	Q4KX8_STEP(p, 4) \
	Q4KX8_STEP(p, 5) \
	Q4KX8_STEP(p, 6) \
	Q4KX8_STEP(p, 7) \
	VPBROADCASTQ (16*p)(SP), Y6 \
	VPSHUFB Y14, Y6, Y6 \
	VPMADDWD Y6, Y4, Y4 \
	VPBROADCASTQ (16*p+8)(SP), Y7 \
	VPSHUFB Y14, Y7, Y7 \
	VPMADDWD Y7, Y5, Y5 \
	VPADDD Y4, Y5, Y4

// Q4KX8_BLOCK: Y13 += the 8 rows' products of the group block at SI with
// the activation block at DI: out - dmin*D*msum + d*D*isum, in the order of
// the 4-token kernel's Q4KX8X4_MINS and Q4KX8X4_FINISH, so a token's result
// does not depend on the kernel that computed it. The mins times the
// activation sums of 32 go to Y11 (sum_j m_j * bs_j), the scaled sums of
// the sub-blocks to Y12. Uses Y0-Y12 and the frame's bytes 0-143;
// prefetches with X8PFI, X8PF bytes ahead.
#define Q4KX8_BLOCK \
	X8PFI X8PF(SI) \
	X8PFI (X8PF+64)(SI) \
	Q4KX8_SCALES(Y9, Y10) \
	VMOVDQU 260(DI), Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPHADDW X1, X0, X0 \
	VMOVDQU X0, 128(SP) \
	Q4KX8_MINPAIR(0, 128) \
	VMOVDQA Y1, Y11 \
	Q4KX8_MINPAIR(1, 128) \
	VPADDD Y1, Y11, Y11 \
	Q4KX8_MINPAIR(2, 128) \
	VPADDD Y1, Y11, Y11 \
	Q4KX8_MINPAIR(3, 128) \
	VPADDD Y1, Y11, Y11 \
	Q4KX8_CHUNK(0) \
	VMOVDQA Y4, Y12 \
	Q4KX8_CHUNK(1) \
	VPADDD Y4, Y12, Y12 \
	Q4KX8_CHUNK(2) \
	VPADDD Y4, Y12, Y12 \
	Q4KX8_CHUNK(3) \
	VPADDD Y4, Y12, Y12 \
	VBROADCASTSS 0(DI), Y1 \
	VCVTPH2PS 16(SI), Y2 \
	VMULPS Y1, Y2, Y2 \
	VCVTDQ2PS Y11, Y11 \
	VFNMADD231PS Y11, Y2, Y13 \
	VCVTPH2PS 0(SI), Y0 \
	VMULPS Y1, Y0, Y0 \
	VCVTDQ2PS Y12, Y12 \
	VFMADD231PS Y12, Y0, Y13

// func q4kx8AVX2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)
//
// Prefetching into L1, 4 KiB ahead.
#define X8PFI PREFETCHT0
#define X8PF 4096
TEXT ·q4kx8AVX2(SB), NOSPLIT, $160-40
#include "q4kx8one_amd64.h"
#undef X8PFI
#undef X8PF

// func q4kx8AVX2L2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)
//
// q4kx8AVX2 with its prefetches into L2, 3 KiB ahead (Intel cores: see
// l2Prefetch in cpu_amd64.go).
#define X8PFI PREFETCHT1
#define X8PF 3072
TEXT ·q4kx8AVX2L2(SB), NOSPLIT, $160-40
#include "q4kx8one_amd64.h"

// func q4kx8AVX2L2h2(w *byte, a *quant.BlockQ8K, nb, half int, out *float32)
//
// q4kx8AVX2L2 over groups g and g+half together, block by block: two
// sequential weight streams per thread, as q80AVX2h2 reads Q8_0 (on
// Sapphire Rapids one interleaved stream per thread read 19-20 GB/s with
// two threads where two-stream Q8_0 read 26-27; PERFORMANCE.md). Each
// group's sums are the one-stream kernel's, in its order. R10 = the bytes
// from group g to group g+half, R11 = the bytes between their outputs; the
// second group's sum waits at 144(SP) while the first one's is in Y13.
TEXT ·q4kx8AVX2L2h2(SB), NOSPLIT, $208-40
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ half+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ nb+16(FP), R10
	IMULQ $1152, R10
	IMULQ DX, R10
	MOVQ DX, R11
	SHLQ $5, R11
	VPBROADCASTD x8b0f<>(SB), Y15
	VMOVDQU x8sc<>(SB), Y14
	VPBROADCASTD x8b3f<>(SB), Y9
	VPBROADCASTD x8b30<>(SB), Y10

x8h2group:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y13, Y13, Y13
	VMOVUPS Y13, 144(SP)

x8h2block:
	Q4KX8_BLOCK
	VMOVUPS Y13, 176(SP)
	VMOVUPS 144(SP), Y13
	ADDQ R10, SI
	Q4KX8_BLOCK
	SUBQ R10, SI
	VMOVUPS Y13, 144(SP)
	VMOVUPS 176(SP), Y13
	ADDQ $1152, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  x8h2block

	VMOVUPS Y13, (R8)
	VMOVUPS 144(SP), Y0
	VMOVUPS Y0, (R8)(R11*1)
	ADDQ $32, R8
	DECQ DX
	JNZ  x8h2group
	VZEROUPPER
	RET
#undef X8PFI
#undef X8PF

// The 4-token kernel (prefill): each weight load is unpacked once for 4
// activation vectors; the tokens' current blocks are at DI, AX, BX, R12.
// Registers in the chunk loop: Y0/Y1 the low/high nibbles, Y2/Y3 products,
// Y4-Y11 the 16-bit sums (low/high sub-block x token), Y15 the nibble mask.
// Frame: 0-127 scales and mins, 128-191 the tokens' pair sums of 32,
// 192-319 the tokens' float sums, 320-447 the tokens' integer block sums.

#define Q4KX8X4_PROD(lo, hi, LO, HI) \
	VPMADDUBSW lo, Y0, Y2 \
	VPMADDUBSW hi, Y1, Y3 \
	VPADDW Y2, LO, LO \
	VPADDW Y3, HI, HI

#define Q4KX8X4_PROD0(lo, hi, LO, HI) \
	VPMADDUBSW lo, Y0, LO \
	VPMADDUBSW hi, Y1, HI

#define Q4KX8X4_LOAD(p, i) \
	VMOVDQU (128+256*(p)+32*(i))(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y15, Y0, Y0 \
	VPAND Y15, Y1, Y1

// One step for the 4 tokens; PROD is Q4KX8X4_PROD or Q4KX8X4_PROD0. The
// activation bytes are broadcast into Y2/Y3 first, then multiplied.
#define Q4KX8X4_STEP(p, i, PROD) \
	Q4KX8X4_LOAD(p, i) \
	VPBROADCASTD (4+64*(p)+4*(i))(DI), Y12 \
	VPBROADCASTD (36+64*(p)+4*(i))(DI), Y13 \
	PROD(Y12, Y13, Y4, Y5) \
	VPBROADCASTD (4+64*(p)+4*(i))(AX), Y12 \
	VPBROADCASTD (36+64*(p)+4*(i))(AX), Y13 \
	PROD(Y12, Y13, Y6, Y7) \
	VPBROADCASTD (4+64*(p)+4*(i))(BX), Y12 \
	VPBROADCASTD (36+64*(p)+4*(i))(BX), Y13 \
	PROD(Y12, Y13, Y8, Y9) \
	VPBROADCASTD (4+64*(p)+4*(i))(R12), Y12 \
	VPBROADCASTD (36+64*(p)+4*(i))(R12), Y13 \
	PROD(Y12, Y13, Y10, Y11)

// Scale the chunk's sums of one token (LO, HI): LO = the chunk's part of
// its integer block sum.
#define Q4KX8X4_APPLY(LO, HI) \
	VPMADDWD Y0, LO, LO \
	VPMADDWD Y1, HI, HI \
	VPADDD HI, LO, LO

#define Q4KX8X4_CHUNK(p) \
	Q4KX8X4_STEP(p, 0, Q4KX8X4_PROD0) \
	Q4KX8X4_STEP(p, 1, Q4KX8X4_PROD) \
	Q4KX8X4_STEP(p, 2, Q4KX8X4_PROD) \
	Q4KX8X4_STEP(p, 3, Q4KX8X4_PROD) \
	Q4KX8X4_STEP(p, 4, Q4KX8X4_PROD) \
	Q4KX8X4_STEP(p, 5, Q4KX8X4_PROD) \
	Q4KX8X4_STEP(p, 6, Q4KX8X4_PROD) \
	Q4KX8X4_STEP(p, 7, Q4KX8X4_PROD) \
	VPBROADCASTQ (16*(p))(SP), Y0 \
	VPSHUFB x8sc<>(SB), Y0, Y0 \
	VPBROADCASTQ (16*(p)+8)(SP), Y1 \
	VPSHUFB x8sc<>(SB), Y1, Y1 \
	Q4KX8X4_APPLY(Y4, Y5) \
	Q4KX8X4_APPLY(Y6, Y7) \
	Q4KX8X4_APPLY(Y8, Y9) \
	Q4KX8X4_APPLY(Y10, Y11)

#define Q4KX8X4_ACC(t, R) \
	VPADDD (320+32*(t))(SP), R, R \
	VMOVDQU R, (320+32*(t))(SP)

// Q4KX8X4_MINS(t, P): the float sum of token t (block at P) -= dmin*D *
// sum_j m_j*bs_j, with the mins' pair words in Y4-Y7 and dmin in Y13.
#define Q4KX8X4_MINS(t, P) \
	VMOVDQU 260(P), Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPHADDW X1, X0, X0 \
	VMOVDQU X0, (128+16*(t))(SP) \
	VPBROADCASTD (128+16*(t))(SP), Y0 \
	VPMADDWD Y0, Y4, Y0 \
	VPBROADCASTD (132+16*(t))(SP), Y1 \
	VPMADDWD Y1, Y5, Y1 \
	VPADDD Y1, Y0, Y0 \
	VPBROADCASTD (136+16*(t))(SP), Y1 \
	VPMADDWD Y1, Y6, Y1 \
	VPADDD Y1, Y0, Y0 \
	VPBROADCASTD (140+16*(t))(SP), Y1 \
	VPMADDWD Y1, Y7, Y1 \
	VPADDD Y1, Y0, Y0 \
	VCVTDQ2PS Y0, Y0 \
	VBROADCASTSS (P), Y1 \
	VMULPS Y13, Y1, Y1 \
	VMOVUPS (192+32*(t))(SP), Y2 \
	VFNMADD231PS Y0, Y1, Y2 \
	VMOVUPS Y2, (192+32*(t))(SP)

// Q4KX8X4_FINISH(t, P): the float sum of token t += d*D * isum, d in Y13.
#define Q4KX8X4_FINISH(t, P) \
	VMOVDQU (320+32*(t))(SP), Y0 \
	VCVTDQ2PS Y0, Y0 \
	VBROADCASTSS (P), Y1 \
	VMULPS Y13, Y1, Y1 \
	VMOVUPS (192+32*(t))(SP), Y2 \
	VFMADD231PS Y0, Y1, Y2 \
	VMOVUPS Y2, (192+32*(t))(SP)

// Q4KX8X4_MPAIR(p, R): R = the words [m_2p[r], m_2p+1[r]] of the 8 rows.
#define Q4KX8X4_MPAIR(p, R) \
	VMOVDQU (64+16*(p))(SP), X3 \
	VPSHUFB x8il<>(SB), X3, X3 \
	VPMOVZXBW X3, R

// func q4kx8AVX2x4(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32, ldo int)
TEXT ·q4kx8AVX2x4(SB), NOSPLIT, $448-48
	MOVQ w+0(FP), SI
	MOVQ nb+16(FP), R9
	IMULQ $292, R9
	MOVQ groups+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ ldo+40(FP), R11
	SHLQ $2, R11
	VPBROADCASTD x8b0f<>(SB), Y15

x4group:
	MOVQ a+8(FP), DI
	LEAQ (DI)(R9*1), AX
	LEAQ (DI)(R9*2), BX
	LEAQ (AX)(R9*2), R12
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 192(SP)
	VMOVUPS Y0, 224(SP)
	VMOVUPS Y0, 256(SP)
	VMOVUPS Y0, 288(SP)

x4block:
	VPBROADCASTD x8b3f<>(SB), Y12
	VPBROADCASTD x8b30<>(SB), Y13
	Q4KX8_SCALES(Y12, Y13)

	Q4KX8X4_MPAIR(0, Y4)
	Q4KX8X4_MPAIR(1, Y5)
	Q4KX8X4_MPAIR(2, Y6)
	Q4KX8X4_MPAIR(3, Y7)
	VCVTPH2PS 16(SI), Y13
	Q4KX8X4_MINS(0, DI)
	Q4KX8X4_MINS(1, AX)
	Q4KX8X4_MINS(2, BX)
	Q4KX8X4_MINS(3, R12)

	Q4KX8X4_CHUNK(0)
	VMOVDQU Y4, 320(SP)
	VMOVDQU Y6, 352(SP)
	VMOVDQU Y8, 384(SP)
	VMOVDQU Y10, 416(SP)
	Q4KX8X4_CHUNK(1)
	Q4KX8X4_ACC(0, Y4)
	Q4KX8X4_ACC(1, Y6)
	Q4KX8X4_ACC(2, Y8)
	Q4KX8X4_ACC(3, Y10)
	Q4KX8X4_CHUNK(2)
	Q4KX8X4_ACC(0, Y4)
	Q4KX8X4_ACC(1, Y6)
	Q4KX8X4_ACC(2, Y8)
	Q4KX8X4_ACC(3, Y10)
	Q4KX8X4_CHUNK(3)
	Q4KX8X4_ACC(0, Y4)
	Q4KX8X4_ACC(1, Y6)
	Q4KX8X4_ACC(2, Y8)
	Q4KX8X4_ACC(3, Y10)

	VCVTPH2PS 0(SI), Y13
	Q4KX8X4_FINISH(0, DI)
	Q4KX8X4_FINISH(1, AX)
	Q4KX8X4_FINISH(2, BX)
	Q4KX8X4_FINISH(3, R12)

	ADDQ $1152, SI
	ADDQ $292, DI
	ADDQ $292, AX
	ADDQ $292, BX
	ADDQ $292, R12
	DECQ CX
	JNZ  x4block

	VMOVUPS 192(SP), Y0
	VMOVUPS Y0, (R8)
	VMOVUPS 224(SP), Y0
	VMOVUPS Y0, (R8)(R11*1)
	VMOVUPS 256(SP), Y0
	VMOVUPS Y0, (R8)(R11*2)
	VMOVUPS 288(SP), Y0
	LEAQ (R8)(R11*2), AX
	VMOVUPS Y0, (AX)(R11*1)
	ADDQ $32, R8
	DECQ DX
	JNZ  x4group
	VZEROUPPER
	RET
