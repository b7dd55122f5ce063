//go:build !purego

#include "textflag.h"

// amxTileQ8K(dst *amxTok, src *quant.BlockQ8K, stride, n int): block k of
// n tokens (token t's at src + t*stride bytes) into one token tile of the
// layout qkTokens describes: each token's 256 quants as 4 rows of 64
// bytes 1024 apart (token t in row t), its scale, its 16 sums of 16 as 8
// sums of 32. Written in order, so each 4 KiB tile fills line by line.
DATA amxOnes<>+0(SB)/8, $0x0001000100010001
DATA amxOnes<>+8(SB)/8, $0x0001000100010001
DATA amxOnes<>+16(SB)/8, $0x0001000100010001
DATA amxOnes<>+24(SB)/8, $0x0001000100010001
GLOBL amxOnes<>(SB), RODATA|NOPTR, $32

TEXT ·amxTileQ8K(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), R8
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ 0(R8), DI   // quants
	MOVQ 8(R8), R9   // scales
	MOVQ 16(R8), R10 // sums
	VMOVDQU amxOnes<>(SB), Y5
	TESTQ CX, CX
	JZ done
loop:
	VMOVDQU64 4(SI), Z0
	VMOVDQU64 68(SI), Z1
	VMOVDQU64 132(SI), Z2
	VMOVDQU64 196(SI), Z3
	VMOVDQU64 Z0, 0(DI)
	VMOVDQU64 Z1, 1024(DI)
	VMOVDQU64 Z2, 2048(DI)
	VMOVDQU64 Z3, 3072(DI)
	MOVL 0(SI), AX
	MOVL AX, 0(R9)
	VPMADDWD 260(SI), Y5, Y4
	VPMOVDW Y4, X4
	VMOVDQU X4, 0(R10)
	ADDQ DX, SI
	ADDQ $64, DI
	ADDQ $4, R9
	ADDQ $16, R10
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET
