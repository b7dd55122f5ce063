// The body of the one-row f32, f16 and bf16 kernels of float_amd64.s, which
// includes it once per weight type after defining the weight conversion:
// WSIZE the bytes of one weight, WLOAD(m, y) 8 weights to 8 floats (may read
// Y14), WSCAL(m, x) one weight to lane 0 of x, and WINIT, which prepares
// WLOAD. Labels are local to each TEXT block, so the copies use the same
// names.
//
// go vet's asmdecl reads only .s files, so it does not check the argument
// offsets below (name+off(FP)); every instance is run against the pure-Go
// references at each ISA level by TestMatVecFloat and TestMatMulFloat.

	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R13
	MOVQ n+16(FP), R9
	MOVQ rows+24(FP), DX
	MOVQ out+32(FP), R8
	WINIT

row:
	MOVQ R13, DI
	MOVQ R9, CX
	ZERO_Y0_Y3
	VXORPS X8, X8, X8

loop32:
	CMPQ CX, $32
	JB   loop8
	WLOAD(0(SI), Y4)
	WLOAD((8*WSIZE)(SI), Y5)
	WLOAD((16*WSIZE)(SI), Y6)
	WLOAD((24*WSIZE)(SI), Y7)
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $(32*WSIZE), SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  loop32

loop8:
	CMPQ CX, $8
	JB   tail
	WLOAD(0(SI), Y4)
	VFMADD231PS (DI), Y4, Y0
	ADDQ $(8*WSIZE), SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8

tail:
	TESTQ CX, CX
	JZ    done
	WSCAL((SI), X4)
	VFMADD231SS (DI), X4, X8
	ADDQ $WSIZE, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	HSUM_STORE
	ADDQ $4, R8
	DECQ DX
	JNZ  row
	VZEROUPPER
	RET
