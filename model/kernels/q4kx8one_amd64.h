// The body of the one-token interleaved Q4_K kernels of q4kx8_amd64.s,
// which includes it once per prefetch: X8PFI is the prefetch instruction
// and X8PF the distance ahead (see Q4KX8_PF). Labels are local to each TEXT
// block, so both copies use the same names. go vet's asmdecl reads only .s
// files; both instances are held to the references (TestMatVecX8 at every
// level, the other one through the test level "avx2-prefetch-*").
//
// Frame: 0-63 scales, 64-127 mins, 128-143 activation pair sums.

	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ groups+24(FP), DX
	MOVQ out+32(FP), R8
	VPBROADCASTD x8b0f<>(SB), Y15
	VMOVDQU x8sc<>(SB), Y14
	VPBROADCASTD x8b3f<>(SB), Y9
	VPBROADCASTD x8b30<>(SB), Y10

x8group:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y13, Y13, Y13

x8block:
	X8PFI X8PF(SI)
	X8PFI (X8PF+64)(SI)
	Q4KX8_SCALES(Y9, Y10)

	// Mins times the activation sums of 32: Y11 = sum_j m_j * bs_j.
	VMOVDQU 260(DI), Y0
	VEXTRACTI128 $1, Y0, X1
	VPHADDW X1, X0, X0
	VMOVDQU X0, 128(SP)
	Q4KX8_MINPAIR(0, 128)
	VMOVDQA Y1, Y11
	Q4KX8_MINPAIR(1, 128)
	VPADDD Y1, Y11, Y11
	Q4KX8_MINPAIR(2, 128)
	VPADDD Y1, Y11, Y11
	Q4KX8_MINPAIR(3, 128)
	VPADDD Y1, Y11, Y11

	Q4KX8_CHUNK(0)
	VMOVDQA Y4, Y12
	Q4KX8_CHUNK(1)
	VPADDD Y4, Y12, Y12
	Q4KX8_CHUNK(2)
	VPADDD Y4, Y12, Y12
	Q4KX8_CHUNK(3)
	VPADDD Y4, Y12, Y12

	// out = out - dmin*D*msum + d*D*isum, 8 rows at once, in the order of
	// the 4-token kernel's Q4KX8X4_MINS and Q4KX8X4_FINISH, so a token's
	// result does not depend on the kernel that computed it.
	VBROADCASTSS 0(DI), Y1
	VCVTPH2PS 16(SI), Y2
	VMULPS Y1, Y2, Y2
	VCVTDQ2PS Y11, Y11
	VFNMADD231PS Y11, Y2, Y13
	VCVTPH2PS 0(SI), Y0
	VMULPS Y1, Y0, Y0
	VCVTDQ2PS Y12, Y12
	VFMADD231PS Y12, Y0, Y13

	ADDQ $1152, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  x8block

	VMOVUPS Y13, (R8)
	ADDQ $32, R8
	DECQ DX
	JNZ  x8group
	VZEROUPPER
	RET
