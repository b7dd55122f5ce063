//go:build !purego

#include "textflag.h"

DATA rbfConst<>+0(SB)/4, $0x00000001  // the kept half's lowest bit
DATA rbfConst<>+4(SB)/4, $0x00007fff  // half of the dropped half, less one
DATA rbfConst<>+8(SB)/4, $0xffff0000  // the kept half
DATA rbfConst<>+12(SB)/4, $0x7fffffff // |x|
DATA rbfConst<>+16(SB)/4, $0x7f800000 // +Inf: |x| above it is a NaN
DATA rbfConst<>+20(SB)/4, $0x00400000 // a NaN's quiet bit
GLOBL rbfConst<>(SB), RODATA|NOPTR, $24

// func roundBF16AVX2(x *float32, n int): quant.RoundBF16, bit for bit, 8
// at a time (n a multiple of 8): round to nearest even on the bits (add
// 0x7fff plus the kept half's lowest bit, drop the low half); a NaN keeps
// its upper half with the quiet bit set.
TEXT ·roundBF16AVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ done
	VPBROADCASTD rbfConst<>+0(SB), Y8
	VPBROADCASTD rbfConst<>+4(SB), Y9
	VPBROADCASTD rbfConst<>+8(SB), Y10
	VPBROADCASTD rbfConst<>+12(SB), Y11
	VPBROADCASTD rbfConst<>+16(SB), Y12
	VPBROADCASTD rbfConst<>+20(SB), Y13
loop:
	VMOVDQU (SI), Y0
	VPSRLD $16, Y0, Y1
	VPAND Y8, Y1, Y1
	VPADDD Y9, Y1, Y1
	VPADDD Y0, Y1, Y1
	VPAND Y10, Y1, Y1
	VPAND Y11, Y0, Y2
	VPCMPGTD Y12, Y2, Y3
	VPOR Y13, Y0, Y4
	VPAND Y10, Y4, Y4
	VPBLENDVB Y3, Y4, Y1, Y1
	VMOVDQU Y1, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET
