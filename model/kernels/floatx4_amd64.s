//go:build !purego

#include "textflag.h"
#include "floatavx2_amd64.h"

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
// LOADW_BF16M (WLOADM in the body), and the pair and single loops load the
// mask after it (WINIT).

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

// The bf16 and f16 kernels are one body, floatx4_amd64.h, instantiated with
// each type's weight loads (floatavx2_amd64.h).

// func bf16AVX2x4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)
TEXT ·bf16AVX2x4(SB), NOSPLIT, $0-65
#define WLOAD(m, y) LOADW_BF16(m, y)
#define WLOADM(m, y) LOADW_BF16M(m, y)
#define WSCAL(m, x) SCALW_BF16(m, x)
#define WINIT INITW_BF16
#include "floatx4_amd64.h"
#undef WLOAD
#undef WLOADM
#undef WSCAL
#undef WINIT

// func f16AVX2x4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)
TEXT ·f16AVX2x4(SB), NOSPLIT, $0-65
#define WLOAD(m, y) LOADW_F16(m, y)
#define WLOADM(m, y) LOADW_F16(m, y)
#define WSCAL(m, x) SCALW_F16(m, x)
#define WINIT
#include "floatx4_amd64.h"
#undef WLOAD
#undef WLOADM
#undef WSCAL
#undef WINIT
