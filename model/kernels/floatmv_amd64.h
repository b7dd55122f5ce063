// The body of the two-stream one-token float kernels of floatmv_amd64.s,
// which includes it once per weight type after defining the weight
// conversion: WLOAD(m, y) 8 weights to 8 floats (may read Y14), WSCAL(m, x)
// one weight broadcast, and WINIT, which prepares WLOAD. Labels are local to
// each TEXT block, so both copies use the same names.
//
// go vet's asmdecl reads only .s files, so it does not check the argument
// offsets below (name+off(FP)); every instance is run against the pure-Go
// references at each ISA level by TestMatVecFloat and TestMatMulFloat.

	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R13
	MOVQ n+16(FP), R9
	MOVQ half+24(FP), DX
	MOVQ out+32(FP), R8
	LEAQ 0(DX*4), R11
	MOVQ R9, R10
	IMULQ DX, R10
	SHLQ $1, R10
	WINIT

row:
	MOVQ R13, DI
	MOVQ R9, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4

	// One accumulator per row, as every f16 and bf16 product of this
	// level keeps per row and token (float1_amd64.h), so a token's result
	// does not depend on the kernel that computed it; two rows are two
	// chains of FMAs, which the loads of two streams keep up with.
loop32:
	CMPQ CX, $32
	JB   loop8
	PF
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	WLOAD((SI), Y8)
	WLOAD(16(SI), Y9)
	WLOAD((SI)(R10*1), Y10)
	WLOAD(16(SI)(R10*1), Y11)
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y10, Y4
	VFMADD231PS Y13, Y9, Y0
	VFMADD231PS Y13, Y11, Y4
	VMOVUPS 64(DI), Y12
	VMOVUPS 96(DI), Y13
	WLOAD(32(SI), Y8)
	WLOAD(48(SI), Y9)
	WLOAD(32(SI)(R10*1), Y10)
	WLOAD(48(SI)(R10*1), Y11)
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y10, Y4
	VFMADD231PS Y13, Y9, Y0
	VFMADD231PS Y13, Y11, Y4
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  loop32

loop8:
	CMPQ CX, $8
	JB   sum
	VMOVUPS (DI), Y12
	WLOAD((SI), Y8)
	WLOAD((SI)(R10*1), Y10)
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y10, Y4
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8

	// Lane 0 of X0: row r as ((t0+t1)+(t2+t3))+((t4+t5)+(t6+t7)); lane 1:
	// row r+half the same way.
sum:
	VHADDPS Y4, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0

tail:
	TESTQ CX, CX
	JZ    store
	WSCAL((SI), X8)
	WSCAL((SI)(R10*1), X9)
	VINSERTPS $0x10, X9, X8, X8
	VMOVSS (DI), X10
	VBROADCASTSS X10, X10
	VFMADD231PS X10, X8, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

store:
	VMOVSS X0, (R8)
	VEXTRACTPS $1, X0, (R8)(R11*1)
	ADDQ $4, R8
	DECQ DX
	JNZ  row
	VZEROUPPER
	RET
