//go:build !purego

#include "textflag.h"

// AMX BF16: amxBF16(p *amxArgs) multiplies one tile of 16 weight rows,
// packed as p.nb B tiles of 32 bf16 (16 pairs x 16 rows x 2), with up to 16
// tokens of bf16 activations (p.a, p.astride bytes apart, zero-padded to a
// multiple of 32): C accumulates in f32 over all of K (TDPBF16PS) and is
// stored straight to out, ntok rows of 16 floats p.ldo bytes apart.

#define LDTILECFG_AX BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg (%rax)
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0 // tilerelease
#define TILEZERO_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD0 // tilezero %tmm2
#define LOAD_A BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x16 // tileloadd (%rsi,%rdx,1),%tmm0
#define LOAD_B BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x1F // tileloadd (%rdi,%rbx,1),%tmm1
#define TDPBF16PS_T2 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5C; BYTE $0xD0 // tdpbf16ps %tmm1,%tmm0,%tmm2
#define STORE_OUT BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x08 // tilestored %tmm2,(%rax,%rcx,1)

TEXT ·amxBF16(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ 0(R8), AX
	LDTILECFG_AX
	MOVQ 8(R8), SI
	MOVQ 16(R8), DX
	MOVQ 24(R8), DI
	MOVQ 48(R8), R11
	MOVQ $64, BX
	TILEZERO_T2
loop:
	LOAD_A
	LOAD_B
	TDPBF16PS_T2
	ADDQ $64, SI
	ADDQ $1024, DI
	DECQ R11
	JNZ loop
	MOVQ 56(R8), AX
	MOVQ 64(R8), CX
	STORE_OUT
	TILERELEASE
	RET

// func toBF16(dst *uint16, src *float32, n int): the top halves of n
// float32s already rounded to bf16 (n a multiple of 16).
TEXT ·toBF16(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ bfdone
bfloop:
	VPSRLD $16, (SI), Z0
	VPMOVDW Z0, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ bfloop
bfdone:
	VZEROUPPER
	RET
