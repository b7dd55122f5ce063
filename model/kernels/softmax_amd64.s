//go:build !purego

#include "textflag.h"

// func maxAVX2(x *float32, n int) float32: the largest of x[:n] as the Go
// loop `if v > mx { mx = v }` from -Inf finds it (n a multiple of 8): NaNs
// are passed over (acc = x > acc ? x : acc, VMAXPS with x first), and of
// equal values the one kept is the same value (a tie of +0 and -0 may keep
// either, which a softmax's exp(v - mx) does not tell apart).
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0xff800000, AX // -Inf
	VMOVD AX, X0
	VBROADCASTSS X0, Y0
	VMOVAPS Y0, Y1
	SHRQ $3, CX
	JZ mdone
	TESTQ $1, CX
	JZ mpairs
	VMOVUPS (SI), Y2
	VMAXPS Y0, Y2, Y0
	ADDQ $32, SI
	DECQ CX
	JZ mdone
mpairs:
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VMAXPS Y0, Y2, Y0
	VMAXPS Y1, Y3, Y1
	ADDQ $64, SI
	SUBQ $2, CX
	JNZ mpairs
mdone:
	VMAXPS Y0, Y1, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X0, X1, X0
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

// func scaleAVX2(x *float32, n int, s float32): x[i] *= s for i < n (n a
// multiple of 8).
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y0
	SHRQ $3, CX
	JZ sdone
sloop:
	VMULPS (SI), Y0, Y1
	VMOVUPS Y1, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ sloop
	VZEROUPPER
sdone:
	RET
