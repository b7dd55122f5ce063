// The body of the four-token float kernels of floatx4_amd64.s, which
// includes it once per weight type after defining the weight conversion:
// WLOAD(m, y) 8 weights to 8 floats (may read Y14), WLOADM(m, y) the same
// for the 3-row loop, which holds a row in Y14, WSCAL(m, x) one weight
// broadcast, and WINIT, which prepares WLOAD after the 3-row loop. Labels
// are local to each TEXT block, so both copies use the same names.
//
// go vet's asmdecl reads only .s files, so it does not check the argument
// offsets below (name+off(FP)); every instance is run against the pure-Go
// references at each ISA level by TestMatVecFloat and TestMatMulFloat.

	MOVQ w+0(FP), R14
	MOVQ ws+8(FP), R15
	SHLQ $1, R15
	MOVQ x+16(FP), R13
	MOVQ xs+24(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), BX
	MOVQ n+32(FP), R9
	MOVQ rows+40(FP), DX
	MOVQ out+48(FP), R8
	MOVQ ldo+56(FP), R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R11

triple:
	CMPQ DX, $3
	JB   pairinit
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	ZERO_Y0_Y11

triple8:
	CMPQ CX, $8
	JB   triplesum
	WLOADM((SI), Y12)
	WLOADM((SI)(R15*1), Y13)
	WLOADM((SI)(R15*2), Y14)
	FMA3x4((DI), Y0, Y4, Y8)
	FMA3x4((DI)(R12*1), Y1, Y5, Y9)
	FMA3x4((DI)(R12*2), Y2, Y6, Y10)
	FMA3x4((DI)(BX*1), Y3, Y7, Y11)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  triple8

triplesum:
	REDUCE4(Y0, Y1, Y2, Y3, X0, X12)
	REDUCE4(Y4, Y5, Y6, Y7, X4, X12)
	REDUCE4(Y8, Y9, Y10, Y11, X8, X12)

tripletail:
	TESTQ CX, CX
	JZ    triplestore
	WSCAL((SI), X12)
	WSCAL((SI)(R15*1), X13)
	WSCAL((SI)(R15*2), X14)
	GATHER4(X15)
	VFMADD231PS X15, X12, X0
	VFMADD231PS X15, X13, X4
	VFMADD231PS X15, X14, X8
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tripletail

triplestore:
	CMPB acc+64(FP), $0
	JEQ  tripleput
	ADD4(X0, 0, X12)
	ADD4(X4, 4, X12)
	ADD4(X8, 8, X12)

tripleput:
	STORE4(X0, 0)
	STORE4(X4, 4)
	STORE4(X8, 8)
	LEAQ (R14)(R15*2), R14
	ADDQ R15, R14
	ADDQ $12, R8
	SUBQ $3, DX
	JMP  triple

pairinit:
	WINIT

pair:
	CMPQ DX, $2
	JB   single
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	ZERO_Y0_Y7

pair16:
	CMPQ CX, $16
	JB   pair8
	WLOAD((SI), Y8)
	WLOAD((SI)(R15*1), Y9)
	FMA2x4(0, Y8, Y9)
	WLOAD(16(SI), Y8)
	WLOAD(16(SI)(R15*1), Y9)
	FMA2x4(32, Y8, Y9)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  pair16

pair8:
	CMPQ CX, $8
	JB   pairsum
	WLOAD((SI), Y8)
	WLOAD((SI)(R15*1), Y9)
	FMA2x4(0, Y8, Y9)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX

pairsum:
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1)
	REDUCE4(Y4, Y5, Y6, Y7, X4, X5)

pairtail:
	TESTQ CX, CX
	JZ    pairstore
	WSCAL((SI), X8)
	WSCAL((SI)(R15*1), X9)
	GATHER4(X10)
	VFMADD231PS X10, X8, X0
	VFMADD231PS X10, X9, X4
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  pairtail

pairstore:
	CMPB acc+64(FP), $0
	JEQ  pairput
	ADD4(X0, 0, X1)
	ADD4(X4, 4, X5)

pairput:
	STORE4(X0, 0)
	STORE4(X4, 4)
	LEAQ (R14)(R15*2), R14
	ADDQ $8, R8
	SUBQ $2, DX
	JMP  pair

single:
	TESTQ DX, DX
	JZ    done
	MOVQ R14, SI
	MOVQ R13, DI
	MOVQ R9, CX
	ZERO_Y0_Y7

	// One accumulator per token, like the 3- and 2-row loops and the
	// one-token kernels (float1_amd64.h), so a token's result does not
	// depend on the kernel or the row's place in the panel.
single16:
	CMPQ CX, $16
	JB   single8
	WLOAD((SI), Y8)
	WLOAD(16(SI), Y9)
	FMA1x4(0, Y8, Y0, Y1, Y2, Y3)
	FMA1x4(32, Y9, Y0, Y1, Y2, Y3)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  single16

single8:
	CMPQ CX, $8
	JB   singlesum
	WLOAD((SI), Y8)
	FMA1x4(0, Y8, Y0, Y1, Y2, Y3)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX

singlesum:
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1)

singletail:
	TESTQ CX, CX
	JZ    singlestore
	WSCAL((SI), X8)
	GATHER4(X10)
	VFMADD231PS X10, X8, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  singletail

singlestore:
	CMPB acc+64(FP), $0
	JEQ  singleput
	ADD4(X0, 0, X1)

singleput:
	STORE4(X0, 0)

done:
	VZEROUPPER
	RET
