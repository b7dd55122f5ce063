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
	Q6KX8_BLOCK
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
