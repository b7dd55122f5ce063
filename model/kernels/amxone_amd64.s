//go:build !purego

#include "textflag.h"

// amxOne(op int, c *int32, a, b *byte, cfg *tileCfg) runs one tile
// instruction on full 16 x 64-byte tiles: C (loaded from c) += A . B, then
// stores C back. The scalar check of each instruction the kernels use, so a
// wrong answer can be told apart as the instruction's (CPU or emulator) or
// the kernel's (TestAMXInstructions).

#define LDTILECFG_AX BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg (%rax)
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0 // tilerelease
#define LOAD_T0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x1E // tileloadd (%rsi,%rbx,1),%tmm0
#define LOAD_T1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x1F // tileloadd (%rdi,%rbx,1),%tmm1
#define LOAD_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x14; BYTE $0x19 // tileloadd (%rcx,%rbx,1),%tmm2
#define STORE_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x19 // tilestored %tmm2,(%rcx,%rbx,1)
#define TDPBSSD_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x73; BYTE $0x5E; BYTE $0xD0 // tdpbssd %tmm1,%tmm0,%tmm2
#define TDPBSUD_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5E; BYTE $0xD0 // tdpbsud %tmm1,%tmm0,%tmm2
#define TDPBUSD_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x71; BYTE $0x5E; BYTE $0xD0 // tdpbusd %tmm1,%tmm0,%tmm2
#define TDPBUUD_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x70; BYTE $0x5E; BYTE $0xD0 // tdpbuud %tmm1,%tmm0,%tmm2
#define TDPBF16PS_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5C; BYTE $0xD0 // tdpbf16ps %tmm1,%tmm0,%tmm2

TEXT ·amxOne(SB), NOSPLIT, $0-40
	MOVQ cfg+32(FP), AX
	LDTILECFG_AX
	MOVQ c+8(FP), CX
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DI
	MOVQ $64, BX
	LOAD_T0
	LOAD_T1
	LOAD_T2
	MOVQ op+0(FP), DX
	CMPQ DX, $0
	JNE not0
	TDPBSSD_T2
	JMP store
not0:
	CMPQ DX, $1
	JNE not1
	TDPBSUD_T2
	JMP store
not1:
	CMPQ DX, $2
	JNE not2
	TDPBUSD_T2
	JMP store
not2:
	CMPQ DX, $3
	JNE not3
	TDPBUUD_T2
	JMP store
not3:
	TDPBF16PS_T2
store:
	STORE_T2
	TILERELEASE
	RET

// amxPeak(n int, bf16 bool, cfg *tileCfg) runs n rounds of four independent
// tile products on zeroed tiles (no loads or stores): the tile unit's own
// peak, for BenchmarkAMXPeak.
#define PZERO0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC0 // tilezero %tmm0
#define PZERO1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC8 // tilezero %tmm1
#define PZERO2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD0 // tilezero %tmm2
#define PZERO3 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD8 // tilezero %tmm3
#define PZERO4 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE0 // tilezero %tmm4
#define PZERO5 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE8 // tilezero %tmm5
#define PI0 BYTE $0xC4; BYTE $0xE2; BYTE $0x73; BYTE $0x5E; BYTE $0xD0 // tdpbssd %tmm1,%tmm0,%tmm2
#define PI1 BYTE $0xC4; BYTE $0xE2; BYTE $0x73; BYTE $0x5E; BYTE $0xD8 // tdpbssd %tmm1,%tmm0,%tmm3
#define PI2 BYTE $0xC4; BYTE $0xE2; BYTE $0x73; BYTE $0x5E; BYTE $0xE0 // tdpbssd %tmm1,%tmm0,%tmm4
#define PI3 BYTE $0xC4; BYTE $0xE2; BYTE $0x73; BYTE $0x5E; BYTE $0xE8 // tdpbssd %tmm1,%tmm0,%tmm5
#define PF0 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5C; BYTE $0xD0 // tdpbf16ps %tmm1,%tmm0,%tmm2
#define PF1 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5C; BYTE $0xD8 // tdpbf16ps %tmm1,%tmm0,%tmm3
#define PF2 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5C; BYTE $0xE0 // tdpbf16ps %tmm1,%tmm0,%tmm4
#define PF3 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5C; BYTE $0xE8 // tdpbf16ps %tmm1,%tmm0,%tmm5

TEXT ·amxPeak(SB), NOSPLIT, $0-24
	MOVQ cfg+16(FP), AX
	LDTILECFG_AX
	PZERO0
	PZERO1
	PZERO2
	PZERO3
	PZERO4
	PZERO5
	MOVQ n+0(FP), CX
	MOVBLZX bf16+8(FP), DX
	TESTQ DX, DX
	JNZ floop
iloop:
	PI0
	PI1
	PI2
	PI3
	DECQ CX
	JNZ iloop
	TILERELEASE
	RET
floop:
	PF0
	PF1
	PF2
	PF3
	DECQ CX
	JNZ floop
	TILERELEASE
	RET
