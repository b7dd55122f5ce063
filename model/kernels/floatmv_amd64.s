//go:build !purego

#include "textflag.h"
#include "floatload_amd64.h"

// One-token float kernels for decode, two rows at a time: row r of the first
// half of the matrix with row r+half of the second, so the weights are read
// as two long sequential streams (each continuing into its next row) that
// share every activation load, with 8 accumulators over 32 elements per
// iteration and each stream prefetched 1 KiB ahead. Measured on Zen 3
// streaming 27 MB BF16 matrices from DRAM (BenchmarkMatVec), one core goes
// from ~7 to ~10 GB/s, where the one-row kernels of float_amd64.s (which
// still serve an odd last row) issue too many instructions per byte for the
// hardware prefetchers alone to keep enough misses in flight; pairing
// adjacent rows instead was slower on 4 KiB rows (short streams that each
// restart the prefetchers). The n%8 tail runs after the accumulators are
// reduced, on lanes 0 and 1 of X0 (one per row).
//
// Registers: SI row r (row r+half is R10 = half*n*2 bytes on), DI x, R8
// out[r] (out[r+half] is R11 = 4*half bytes on), CX elements left, Y14 the
// bf16 shuffle mask.

// The cache line 1 KiB ahead in both streams.
#define PF PREFETCHT0 1024(SI); PREFETCHT0 1024(SI)(R10*1)

// func bf16AVX2h2(w *byte, x *float32, n, half int, out *float32)
//
// Rows r and r+half for r < half (half > 0).
TEXT ·bf16AVX2h2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R13
	MOVQ n+16(FP), R9
	MOVQ half+24(FP), DX
	MOVQ out+32(FP), R8
	LEAQ 0(DX*4), R11
	MOVQ R9, R10
	IMULQ DX, R10
	SHLQ $1, R10
	INITW_BF16

bf16AVX2h2row:
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

bf16AVX2h2loop32:
	CMPQ CX, $32
	JB   bf16AVX2h2loop8
	PF
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	LOADW_BF16((SI), Y8)
	LOADW_BF16(16(SI), Y9)
	LOADW_BF16((SI)(R10*1), Y10)
	LOADW_BF16(16(SI)(R10*1), Y11)
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y13, Y9, Y1
	VFMADD231PS Y12, Y10, Y4
	VFMADD231PS Y13, Y11, Y5
	VMOVUPS 64(DI), Y12
	VMOVUPS 96(DI), Y13
	LOADW_BF16(32(SI), Y8)
	LOADW_BF16(48(SI), Y9)
	LOADW_BF16(32(SI)(R10*1), Y10)
	LOADW_BF16(48(SI)(R10*1), Y11)
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y9, Y3
	VFMADD231PS Y12, Y10, Y6
	VFMADD231PS Y13, Y11, Y7
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  bf16AVX2h2loop32

bf16AVX2h2loop8:
	CMPQ CX, $8
	JB   bf16AVX2h2sum
	VMOVUPS (DI), Y12
	LOADW_BF16((SI), Y8)
	LOADW_BF16((SI)(R10*1), Y10)
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y10, Y4
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  bf16AVX2h2loop8

bf16AVX2h2sum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VADDPS Y5, Y4, Y4
	VADDPS Y7, Y6, Y6
	VADDPS Y6, Y4, Y4
	VHADDPS Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0

bf16AVX2h2tail:
	TESTQ CX, CX
	JZ    bf16AVX2h2store
	SCALW_BF16((SI), X8)
	SCALW_BF16((SI)(R10*1), X9)
	VINSERTPS $0x10, X9, X8, X8
	VMOVSS (DI), X10
	VBROADCASTSS X10, X10
	VFMADD231PS X10, X8, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  bf16AVX2h2tail

bf16AVX2h2store:
	VMOVSS X0, (R8)
	VEXTRACTPS $1, X0, (R8)(R11*1)
	ADDQ $4, R8
	DECQ DX
	JNZ  bf16AVX2h2row
	VZEROUPPER
	RET

// func f16AVX2h2(w *byte, x *float32, n, half int, out *float32)
//
// Rows r and r+half for r < half (half > 0).
TEXT ·f16AVX2h2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R13
	MOVQ n+16(FP), R9
	MOVQ half+24(FP), DX
	MOVQ out+32(FP), R8
	LEAQ 0(DX*4), R11
	MOVQ R9, R10
	IMULQ DX, R10
	SHLQ $1, R10

f16AVX2h2row:
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

f16AVX2h2loop32:
	CMPQ CX, $32
	JB   f16AVX2h2loop8
	PF
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	LOADW_F16((SI), Y8)
	LOADW_F16(16(SI), Y9)
	LOADW_F16((SI)(R10*1), Y10)
	LOADW_F16(16(SI)(R10*1), Y11)
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y13, Y9, Y1
	VFMADD231PS Y12, Y10, Y4
	VFMADD231PS Y13, Y11, Y5
	VMOVUPS 64(DI), Y12
	VMOVUPS 96(DI), Y13
	LOADW_F16(32(SI), Y8)
	LOADW_F16(48(SI), Y9)
	LOADW_F16(32(SI)(R10*1), Y10)
	LOADW_F16(48(SI)(R10*1), Y11)
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y9, Y3
	VFMADD231PS Y12, Y10, Y6
	VFMADD231PS Y13, Y11, Y7
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f16AVX2h2loop32

f16AVX2h2loop8:
	CMPQ CX, $8
	JB   f16AVX2h2sum
	VMOVUPS (DI), Y12
	LOADW_F16((SI), Y8)
	LOADW_F16((SI)(R10*1), Y10)
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y10, Y4
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f16AVX2h2loop8

f16AVX2h2sum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VADDPS Y5, Y4, Y4
	VADDPS Y7, Y6, Y6
	VADDPS Y6, Y4, Y4
	VHADDPS Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0

f16AVX2h2tail:
	TESTQ CX, CX
	JZ    f16AVX2h2store
	SCALW_F16((SI), X8)
	SCALW_F16((SI)(R10*1), X9)
	VINSERTPS $0x10, X9, X8, X8
	VMOVSS (DI), X10
	VBROADCASTSS X10, X10
	VFMADD231PS X10, X8, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  f16AVX2h2tail

f16AVX2h2store:
	VMOVSS X0, (R8)
	VEXTRACTPS $1, X0, (R8)(R11*1)
	ADDQ $4, R8
	DECQ DX
	JNZ  f16AVX2h2row
	VZEROUPPER
	RET
