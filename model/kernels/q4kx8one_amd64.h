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
	Q4KX8_BLOCK
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
