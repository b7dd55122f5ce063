//go:build !purego

#include "textflag.h"

// func expSumZ(x *float32, n int, scale, mx float32) float64
//
// x[i] = exp(x[i]*scale - mx) for i < n, 16 at a time (the last n%16 with
// masked loads and stores), returning the sum of the results accumulated in
// float64: the exponentials of a softmax row. exp is Cephes' expf as in
// gelu_amd64.s (n = round(a*log2e), r = a - n*ln2 in two parts, degree-5
// polynomial, 2^n added to the exponent bits; a < -87 gives 0, which the
// f16 rounding of attention weights makes 0 anyway); about 2 ulps from the
// float64 exp (TestExpSum).

DATA expC<>+0(SB)/4, $0x3fb8aa3b   // log2(e)
DATA expC<>+4(SB)/4, $0x3f318000   // ln2 high part 0.693359375
DATA expC<>+8(SB)/4, $0xb95e8083   // ln2 low part -2.12194440e-4
DATA expC<>+12(SB)/4, $0x39506967  // 1.9875691500e-4
DATA expC<>+16(SB)/4, $0x3ab743ce  // 1.3981999507e-3
DATA expC<>+20(SB)/4, $0x3c088908  // 8.3334519073e-3
DATA expC<>+24(SB)/4, $0x3d2aa9c1  // 4.1665795894e-2
DATA expC<>+28(SB)/4, $0x3e2aaaaa  // 1.6666665459e-1
DATA expC<>+32(SB)/4, $0x3f000000  // 5.0000001201e-1
DATA expC<>+36(SB)/4, $0xc2ae0000  // -87
DATA expC<>+40(SB)/4, $0x3f800000  // 1
GLOBL expC<>(SB), RODATA|NOPTR, $44

// exp(Z0*scale - mx) into Z0; Z1-Z3 and K2 are clobbered.
#define EXPZ \
	VMULPS Z31, Z0, Z0 \
	VSUBPS Z30, Z0, Z0 \
	VCMPPS $1, Z25, Z0, K2 \
	VMULPS Z16, Z0, Z1 \
	VRNDSCALEPS $0, Z1, Z1 \
	VFNMADD231PS Z17, Z1, Z0 \
	VFNMADD231PS Z18, Z1, Z0 \
	VMOVAPS Z19, Z2 \
	VFMADD213PS Z20, Z0, Z2 \
	VFMADD213PS Z21, Z0, Z2 \
	VFMADD213PS Z22, Z0, Z2 \
	VFMADD213PS Z23, Z0, Z2 \
	VFMADD213PS Z24, Z0, Z2 \
	VMULPS Z0, Z0, Z3 \
	VFMADD213PS Z0, Z3, Z2 \
	VADDPS Z26, Z2, Z2 \
	VCVTPS2DQ Z1, Z1 \
	VPSLLD $23, Z1, Z1 \
	VPADDD Z1, Z2, Z0 \
	VPXORD Z0, Z0, K2, Z0

// The 16 results in Z0 added to the float64 sums Z28 (low 8) and Z29.
#define SUMZ \
	VCVTPS2PD Y0, Z1 \
	VADDPD Z1, Z28, Z28 \
	VEXTRACTF64X4 $1, Z0, Y2 \
	VCVTPS2PD Y2, Z2 \
	VADDPD Z2, Z29, Z29

TEXT ·expSumZ(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS scale+16(FP), Z31
	VBROADCASTSS mx+20(FP), Z30
	VBROADCASTSS expC<>+0(SB), Z16
	VBROADCASTSS expC<>+4(SB), Z17
	VBROADCASTSS expC<>+8(SB), Z18
	VBROADCASTSS expC<>+12(SB), Z19
	VBROADCASTSS expC<>+16(SB), Z20
	VBROADCASTSS expC<>+20(SB), Z21
	VBROADCASTSS expC<>+24(SB), Z22
	VBROADCASTSS expC<>+28(SB), Z23
	VBROADCASTSS expC<>+32(SB), Z24
	VBROADCASTSS expC<>+36(SB), Z25
	VBROADCASTSS expC<>+40(SB), Z26
	VXORPD Z28, Z28, Z28
	VXORPD Z29, Z29, Z29

loop:
	CMPQ CX, $16
	JB   tail
	VMOVUPS (DI), Z0
	EXPZ
	VMOVUPS Z0, (DI)
	SUMZ
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  loop

tail:
	TESTQ CX, CX
	JZ    fin
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMOVUPS.Z (DI), K1, Z0
	EXPZ
	VMOVUPS Z0, K1, (DI)
	VMOVAPS.Z Z0, K1, Z0 // the lanes past n are exp(-mx), not part of the sum
	SUMZ

fin:
	VADDPD Z29, Z28, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET
