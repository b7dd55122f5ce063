//go:build !purego

#include "textflag.h"
#include "floatavx2_amd64.h"

// One-token float kernels for decode, two rows at a time: row r of the first
// half of the matrix with row r+half of the second, so the weights are read
// as two long sequential streams (each continuing into its next row) that
// share every activation load, with one accumulator per row (see
// floatmv_amd64.h) and each stream prefetched 1 KiB ahead. Measured on Zen 3
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

// The bf16 and f16 kernels are one body, floatmv_amd64.h, instantiated with
// each type's weight loads (floatavx2_amd64.h).

// func bf16AVX2h2(w *byte, x *float32, n, half int, out *float32)
//
// Rows r and r+half for r < half (half > 0).
TEXT ·bf16AVX2h2(SB), NOSPLIT, $0-40
#define WLOAD(m, y) LOADW_BF16(m, y)
#define WSCAL(m, x) SCALW_BF16(m, x)
#define WINIT INITW_BF16
#include "floatmv_amd64.h"
#undef WLOAD
#undef WSCAL
#undef WINIT

// func f16AVX2h2(w *byte, x *float32, n, half int, out *float32)
//
// Rows r and r+half for r < half (half > 0).
TEXT ·f16AVX2h2(SB), NOSPLIT, $0-40
#define WLOAD(m, y) LOADW_F16(m, y)
#define WSCAL(m, x) SCALW_F16(m, x)
#define WINIT
#include "floatmv_amd64.h"
#undef WLOAD
#undef WSCAL
#undef WINIT
