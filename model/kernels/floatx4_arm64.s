//go:build !purego

#include "textflag.h"

// Four-token float kernels for prefill (the NEON form of floatx4_amd64.s):
// each weight element is converted to f32 once and multiplied into 4 token
// accumulators, two rows at a time, so the 8 accumulators (2 rows x 4
// tokens) share every activation load. Same panel contract as the amd64
// kernels (floatx4.go), except that rows must be even: the Go wrapper in
// floatx4_arm64.go runs an odd last row. The n%8 tail is summed here, one
// element at a time into the pair's reduced sums (FMLA by element): it was
// Go code per element and token, and the attention's value products, whose
// length is the positions a query sees, have one almost every call. Every
// WORD is an instruction the Go arm64 assembler lacks, with its mnemonic in
// the comment (checked with aarch64-linux-gnu-objdump).
//
// Registers: R0 the pair's first row (the second is R1 = 2*ws bytes on), R9
// and R10 the two rows, R11-R14 tokens 0-3 (R3 = 4*xs bytes apart), R4 the
// elements of the vector loop (n&^7), R15 of them left, R19 the tail's
// (n&7), R20 of them left, R6 out[r] (token t at R7 = 4*ldo bytes per t), R8
// acc, V31 zero; V16-V19 row r against tokens 0-3, V20-V23 row r+1, then
// V24 and V26 their sums. R18 and R26-R29 are never touched.

// out[t*ldo+r] and out[t*ldo+r+1] into lane t of V28 and V29.
#define LOADLANE(t) \
	MOVWU (R16), R17 \
	VMOV R17, V28.S[t] \
	MOVWU 4(R16), R17 \
	VMOV R17, V29.S[t] \
	ADD R7, R16, R16

// Lane t of V24 and V26 to out[t*ldo+r] and out[t*ldo+r+1].
#define STORELANE(t) \
	VMOV V24.S[t], R17 \
	MOVW R17, (R16) \
	VMOV V26.S[t], R17 \
	MOVW R17, 4(R16) \
	ADD R7, R16, R16

// func bf16NEONx4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)
//
// rows even and positive, n positive (the Go wrapper runs an odd last row).
TEXT ·bf16NEONx4(SB), NOSPLIT, $0-65
	MOVD w+0(FP), R0
	MOVD ws+8(FP), R1
	LSL  $1, R1, R1
	MOVD x+16(FP), R2
	MOVD xs+24(FP), R3
	LSL  $2, R3, R3
	MOVD n+32(FP), R4
	MOVD rows+40(FP), R5
	LSR  $1, R5, R5
	MOVD out+48(FP), R6
	MOVD ldo+56(FP), R7
	LSL  $2, R7, R7
	MOVBU acc+64(FP), R8
	AND  $7, R4, R19
	AND  $~7, R4, R4
	VEOR V31.B16, V31.B16, V31.B16
bf16x4pair:
	MOVD R0, R9
	ADD  R1, R0, R10
	MOVD R2, R11
	ADD  R3, R11, R12
	ADD  R3, R12, R13
	ADD  R3, R13, R14
	MOVD R4, R15
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	CBZ  R15, bf16x4sum
bf16x4loop:
	VLD1.P 16(R9), [V12.H8]
	VLD1.P 16(R10), [V13.H8]
	// bf16 is the top half of an f32: interleave zero halfwords below.
	VZIP1 V12.H8, V31.H8, V0.H8
	VZIP2 V12.H8, V31.H8, V1.H8
	VZIP1 V13.H8, V31.H8, V2.H8
	VZIP2 V13.H8, V31.H8, V3.H8
	VLD1.P 32(R11), [V4.S4, V5.S4]
	VLD1.P 32(R12), [V6.S4, V7.S4]
	VLD1.P 32(R13), [V8.S4, V9.S4]
	VLD1.P 32(R14), [V10.S4, V11.S4]
	VFMLA V0.S4, V4.S4, V16.S4
	VFMLA V2.S4, V4.S4, V20.S4
	VFMLA V0.S4, V6.S4, V17.S4
	VFMLA V2.S4, V6.S4, V21.S4
	VFMLA V0.S4, V8.S4, V18.S4
	VFMLA V2.S4, V8.S4, V22.S4
	VFMLA V0.S4, V10.S4, V19.S4
	VFMLA V2.S4, V10.S4, V23.S4
	VFMLA V1.S4, V5.S4, V16.S4
	VFMLA V3.S4, V5.S4, V20.S4
	VFMLA V1.S4, V7.S4, V17.S4
	VFMLA V3.S4, V7.S4, V21.S4
	VFMLA V1.S4, V9.S4, V18.S4
	VFMLA V3.S4, V9.S4, V22.S4
	VFMLA V1.S4, V11.S4, V19.S4
	VFMLA V3.S4, V11.S4, V23.S4
	SUBS $8, R15, R15
	BNE  bf16x4loop
bf16x4sum:
	WORD $0x6e31d618 // FADDP V24.4S, V16.4S, V17.4S
	WORD $0x6e33d659 // FADDP V25.4S, V18.4S, V19.4S
	WORD $0x6e39d718 // FADDP V24.4S, V24.4S, V25.4S
	WORD $0x6e35d69a // FADDP V26.4S, V20.4S, V21.4S
	WORD $0x6e37d6db // FADDP V27.4S, V22.4S, V23.4S
	WORD $0x6e3bd75a // FADDP V26.4S, V26.4S, V27.4S
	// The tail: element by element, the two rows' weights (converted
	// into V1's lanes 0 and 1) times the 4 tokens' into V24 and V26.
	CBZ  R19, bf16x4taildone
	MOVD R19, R20
bf16x4tail:
	VLD1.P 2(R9), V0.H[0]
	VLD1.P 2(R10), V0.H[1]
	VZIP1 V0.H8, V31.H8, V1.H8 // bf16 is the top half of an f32
	VLD1.P 4(R11), V2.S[0]
	VLD1.P 4(R12), V2.S[1]
	VLD1.P 4(R13), V2.S[2]
	VLD1.P 4(R14), V2.S[3]
	WORD $0x4f811058 // FMLA V24.4S, V2.4S, V1.S[0]
	WORD $0x4fa1105a // FMLA V26.4S, V2.4S, V1.S[1]
	SUBS $1, R20, R20
	BNE  bf16x4tail
bf16x4taildone:
	CBZ  R8, bf16x4store
	MOVD R6, R16
	LOADLANE(0)
	LOADLANE(1)
	LOADLANE(2)
	LOADLANE(3)
	WORD $0x4e3cd718 // FADD V24.4S, V24.4S, V28.4S
	WORD $0x4e3dd75a // FADD V26.4S, V26.4S, V29.4S
bf16x4store:
	MOVD R6, R16
	STORELANE(0)
	STORELANE(1)
	STORELANE(2)
	STORELANE(3)
	ADD  R1, R0, R0
	ADD  R1, R0, R0
	ADD  $8, R6, R6
	SUBS $1, R5, R5
	BNE  bf16x4pair
	RET

// func f16NEONx4(w *byte, ws int, x *float32, xs, n, rows int, out *float32, ldo int, acc bool)
//
// rows even and positive, n positive (the Go wrapper runs an odd last row).
TEXT ·f16NEONx4(SB), NOSPLIT, $0-65
	MOVD w+0(FP), R0
	MOVD ws+8(FP), R1
	LSL  $1, R1, R1
	MOVD x+16(FP), R2
	MOVD xs+24(FP), R3
	LSL  $2, R3, R3
	MOVD n+32(FP), R4
	MOVD rows+40(FP), R5
	LSR  $1, R5, R5
	MOVD out+48(FP), R6
	MOVD ldo+56(FP), R7
	LSL  $2, R7, R7
	MOVBU acc+64(FP), R8
	AND  $7, R4, R19
	AND  $~7, R4, R4
	VEOR V31.B16, V31.B16, V31.B16
f16x4pair:
	MOVD R0, R9
	ADD  R1, R0, R10
	MOVD R2, R11
	ADD  R3, R11, R12
	ADD  R3, R12, R13
	ADD  R3, R13, R14
	MOVD R4, R15
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	CBZ  R15, f16x4sum
f16x4loop:
	VLD1.P 16(R9), [V12.H8]
	VLD1.P 16(R10), [V13.H8]
	WORD $0x0e217980 // FCVTL V0.4S, V12.4H
	WORD $0x4e217981 // FCVTL2 V1.4S, V12.8H
	WORD $0x0e2179a2 // FCVTL V2.4S, V13.4H
	WORD $0x4e2179a3 // FCVTL2 V3.4S, V13.8H
	VLD1.P 32(R11), [V4.S4, V5.S4]
	VLD1.P 32(R12), [V6.S4, V7.S4]
	VLD1.P 32(R13), [V8.S4, V9.S4]
	VLD1.P 32(R14), [V10.S4, V11.S4]
	VFMLA V0.S4, V4.S4, V16.S4
	VFMLA V2.S4, V4.S4, V20.S4
	VFMLA V0.S4, V6.S4, V17.S4
	VFMLA V2.S4, V6.S4, V21.S4
	VFMLA V0.S4, V8.S4, V18.S4
	VFMLA V2.S4, V8.S4, V22.S4
	VFMLA V0.S4, V10.S4, V19.S4
	VFMLA V2.S4, V10.S4, V23.S4
	VFMLA V1.S4, V5.S4, V16.S4
	VFMLA V3.S4, V5.S4, V20.S4
	VFMLA V1.S4, V7.S4, V17.S4
	VFMLA V3.S4, V7.S4, V21.S4
	VFMLA V1.S4, V9.S4, V18.S4
	VFMLA V3.S4, V9.S4, V22.S4
	VFMLA V1.S4, V11.S4, V19.S4
	VFMLA V3.S4, V11.S4, V23.S4
	SUBS $8, R15, R15
	BNE  f16x4loop
f16x4sum:
	WORD $0x6e31d618 // FADDP V24.4S, V16.4S, V17.4S
	WORD $0x6e33d659 // FADDP V25.4S, V18.4S, V19.4S
	WORD $0x6e39d718 // FADDP V24.4S, V24.4S, V25.4S
	WORD $0x6e35d69a // FADDP V26.4S, V20.4S, V21.4S
	WORD $0x6e37d6db // FADDP V27.4S, V22.4S, V23.4S
	WORD $0x6e3bd75a // FADDP V26.4S, V26.4S, V27.4S
	// The tail: element by element, the two rows' weights (converted
	// into V1's lanes 0 and 1) times the 4 tokens' into V24 and V26.
	CBZ  R19, f16x4taildone
	MOVD R19, R20
f16x4tail:
	VLD1.P 2(R9), V0.H[0]
	VLD1.P 2(R10), V0.H[1]
	WORD $0x0e217801 // FCVTL V1.4S, V0.4H
	VLD1.P 4(R11), V2.S[0]
	VLD1.P 4(R12), V2.S[1]
	VLD1.P 4(R13), V2.S[2]
	VLD1.P 4(R14), V2.S[3]
	WORD $0x4f811058 // FMLA V24.4S, V2.4S, V1.S[0]
	WORD $0x4fa1105a // FMLA V26.4S, V2.4S, V1.S[1]
	SUBS $1, R20, R20
	BNE  f16x4tail
f16x4taildone:
	CBZ  R8, f16x4store
	MOVD R6, R16
	LOADLANE(0)
	LOADLANE(1)
	LOADLANE(2)
	LOADLANE(3)
	WORD $0x4e3cd718 // FADD V24.4S, V24.4S, V28.4S
	WORD $0x4e3dd75a // FADD V26.4S, V26.4S, V29.4S
f16x4store:
	MOVD R6, R16
	STORELANE(0)
	STORELANE(1)
	STORELANE(2)
	STORELANE(3)
	ADD  R1, R0, R0
	ADD  R1, R0, R0
	ADD  $8, R6, R6
	SUBS $1, R5, R5
	BNE  f16x4pair
	RET
