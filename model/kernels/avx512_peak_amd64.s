//go:build !purego

#include "textflag.h"

// Throughput probes for BenchmarkPeak: n iterations of 12 independent
// 512-bit dot-product instructions (12 accumulators hide the 4-5 cycle
// latency on every current core).

// func vnniPeakZ(n int)
TEXT ·vnniPeakZ(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13

vnniloop:
	VPDPBUSD Z13, Z12, Z0
	VPDPBUSD Z13, Z12, Z1
	VPDPBUSD Z13, Z12, Z2
	VPDPBUSD Z13, Z12, Z3
	VPDPBUSD Z13, Z12, Z4
	VPDPBUSD Z13, Z12, Z5
	VPDPBUSD Z13, Z12, Z6
	VPDPBUSD Z13, Z12, Z7
	VPDPBUSD Z13, Z12, Z8
	VPDPBUSD Z13, Z12, Z9
	VPDPBUSD Z13, Z12, Z10
	VPDPBUSD Z13, Z12, Z11
	DECQ CX
	JNZ  vnniloop
	VZEROUPPER
	RET

// func bf16PeakZ(n int)
TEXT ·bf16PeakZ(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13

bf16loop:
	BYTE $0x62; BYTE $0xd2; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xc5 // VDPBF16PS zmm0, zmm12, zmm13
	BYTE $0x62; BYTE $0xd2; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xcd // VDPBF16PS zmm1, zmm12, zmm13
	BYTE $0x62; BYTE $0xd2; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xd5 // VDPBF16PS zmm2, zmm12, zmm13
	BYTE $0x62; BYTE $0xd2; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xdd // VDPBF16PS zmm3, zmm12, zmm13
	BYTE $0x62; BYTE $0xd2; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xe5 // VDPBF16PS zmm4, zmm12, zmm13
	BYTE $0x62; BYTE $0xd2; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xed // VDPBF16PS zmm5, zmm12, zmm13
	BYTE $0x62; BYTE $0xd2; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xf5 // VDPBF16PS zmm6, zmm12, zmm13
	BYTE $0x62; BYTE $0xd2; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xfd // VDPBF16PS zmm7, zmm12, zmm13
	BYTE $0x62; BYTE $0x52; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xc5 // VDPBF16PS zmm8, zmm12, zmm13
	BYTE $0x62; BYTE $0x52; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xcd // VDPBF16PS zmm9, zmm12, zmm13
	BYTE $0x62; BYTE $0x52; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xd5 // VDPBF16PS zmm10, zmm12, zmm13
	BYTE $0x62; BYTE $0x52; BYTE $0x1e; BYTE $0x48; BYTE $0x52; BYTE $0xdd // VDPBF16PS zmm11, zmm12, zmm13
	DECQ CX
	JNZ  bf16loop
	VZEROUPPER
	RET
