//go:build !purego

#include "textflag.h"

// func prefetchLines(p *byte, n int) asks for the n cache lines from p
// (PREFETCHT0; a prefetch past mapped memory does not fault).
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
loop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ loop
done:
	RET
