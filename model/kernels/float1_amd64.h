// The body of the one-row f16 and bf16 kernels of float_amd64.s (an odd
// last row of the two-stream kernels), which includes it once per weight
// type after defining the weight conversion: WLOAD(m, y) 8 weights to 8
// floats (may read Y14), WSCAL(m, x) one weight to lane 0 of x, and WINIT,
// which prepares WLOAD. Labels are local to each TEXT block, so the copies
// use the same names.
//
// It sums in the order every f16 and bf16 product of this level uses (the
// two-stream kernels of floatmv_amd64.h and the 4-token ones of
// floatx4_amd64.h), so that a token's result does not depend on the kernel
// that computed it: one accumulator of 8 lanes over the elements 8 at a
// time, lane t summed as ((t0+t1)+(t2+t3))+((t4+t5)+(t6+t7)), then the n%8
// tail added to the sum element by element.
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
	VXORPS Y0, Y0, Y0

loop8:
	CMPQ CX, $8
	JB   sum
	WLOAD(0(SI), Y4)
	VFMADD231PS (DI), Y4, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8

sum:
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0

tail:
	TESTQ CX, CX
	JZ    done
	WSCAL((SI), X4)
	VFMADD231SS (DI), X4, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VMOVSS X0, (R8)
	ADDQ $4, R8
	DECQ DX
	JNZ  row
	VZEROUPPER
	RET
