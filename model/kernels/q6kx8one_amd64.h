// The body of the one-token interleaved Q6_K kernels of q6kx8_amd64.s,
// which includes it once per prefetch: X6PFI is the prefetch instruction
// and X6PF the distance ahead (see Q6KX8_PF). Labels are local to each TEXT
// block, so both copies use the same names. go vet's asmdecl reads only .s
// files; both instances are held to the references (TestMatVecX8 at every
// level, the other one through the test level "avx2-prefetch-*").
//
// The quants are used unsigned (0..63) and the -32 offset is removed once
// per block as 32 * sum(scale * bsum). Frame: four scale vectors.

	MOVQ w+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ groups+24(FP), DX
	MOVQ out+32(FP), R8
	VPBROADCASTD x6b0f<>(SB), Y15
	VPBROADCASTD x6b30<>(SB), Y14

x6group:
	MOVQ R13, DI
	MOVQ nb+16(FP), CX
	VXORPS Y13, Y13, Y13

x6block:
	X6PFI X6PF(SI)
	X6PFI (X6PF+64)(SI)
	X6PFI (X6PF+128)(SI)
	Q6KX8_CORR(0)
	VMOVDQA Y1, Y11
	Q6KX8_CORR(2)
	VPADDD Y1, Y11, Y11
	Q6KX8_CORR(4)
	VPADDD Y1, Y11, Y11
	Q6KX8_CORR(6)
	VPADDD Y1, Y11, Y11
	Q6KX8_CORR(8)
	VPADDD Y1, Y11, Y11
	Q6KX8_CORR(10)
	VPADDD Y1, Y11, Y11
	Q6KX8_CORR(12)
	VPADDD Y1, Y11, Y11
	Q6KX8_CORR(14)
	VPADDD Y1, Y11, Y11
	VPSLLD $5, Y11, Y11
	VPXOR Y12, Y12, Y12
	VPSUBD Y11, Y12, Y12

	Q6KX8_GROUP(0, 0)
	Q6KX8_GROUP(0, 1)
	Q6KX8_GROUP(1, 0)
	Q6KX8_GROUP(1, 1)

	// out += d*D*isum, 8 rows at once.
	VBROADCASTSS 0(DI), Y1
	VCVTPH2PS 0(SI), Y0
	VMULPS Y1, Y0, Y0
	VCVTDQ2PS Y12, Y12
	VFMADD231PS Y12, Y0, Y13

	ADDQ $1680, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  x6block

	VMOVUPS Y13, (R8)
	ADDQ $32, R8
	DECQ DX
	JNZ  x6group
	VZEROUPPER
	RET
