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

// amxBF16x2(p *amxArgs): amxBF16 for two row tiles (p.w and p.ws: their
// packed B tiles) times two full token tiles (p.a and p.a + 16*p.astride),
// four accumulator tiles, so each tile load feeds two products. out gets
// token tile i, row tile j at p.out + 16*i*p.ldo + 64*j.
#define LOAD_A0X BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x16 // tileloadd (%rsi,%rdx,1),%tmm0
#define LOAD_A1X BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x10 // tileloadd (%rax,%rdx,1),%tmm1
#define LOAD_B0X BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x14; BYTE $0x1F // tileloadd (%rdi,%rbx,1),%tmm2
#define LOAD_B1X BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x1C; BYTE $0x19 // tileloadd (%rcx,%rbx,1),%tmm3
#define ZERO_T4 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE0 // tilezero %tmm4
#define ZERO_T5 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE8 // tilezero %tmm5
#define ZERO_T6 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xF0 // tilezero %tmm6
#define ZERO_T7 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xF8 // tilezero %tmm7
#define BF_00 BYTE $0xC4; BYTE $0xE2; BYTE $0x6A; BYTE $0x5C; BYTE $0xE0 // tdpbf16ps %tmm2,%tmm0,%tmm4
#define BF_01 BYTE $0xC4; BYTE $0xE2; BYTE $0x62; BYTE $0x5C; BYTE $0xE8 // tdpbf16ps %tmm3,%tmm0,%tmm5
#define BF_10 BYTE $0xC4; BYTE $0xE2; BYTE $0x6A; BYTE $0x5C; BYTE $0xF1 // tdpbf16ps %tmm2,%tmm1,%tmm6
#define BF_11 BYTE $0xC4; BYTE $0xE2; BYTE $0x62; BYTE $0x5C; BYTE $0xF9 // tdpbf16ps %tmm3,%tmm1,%tmm7
#define ST_00 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x24; BYTE $0x16 // tilestored %tmm4,(%rsi,%rdx,1)
#define ST_01 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x6C; BYTE $0x16; BYTE $0x40 // tilestored %tmm5,0x40(%rsi,%rdx,1)
#define ST_10 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x34; BYTE $0x10 // tilestored %tmm6,(%rax,%rdx,1)
#define ST_11 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x7C; BYTE $0x10; BYTE $0x40 // tilestored %tmm7,0x40(%rax,%rdx,1)

TEXT ·amxBF16x2(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ 0(R8), AX
	LDTILECFG_AX
	MOVQ 8(R8), SI
	MOVQ 16(R8), DX
	MOVQ DX, AX
	SHLQ $4, AX
	ADDQ SI, AX
	MOVQ 24(R8), DI
	MOVQ 32(R8), CX
	MOVQ 48(R8), R11
	MOVQ $64, BX
	ZERO_T4
	ZERO_T5
	ZERO_T6
	ZERO_T7
x2loop:
	LOAD_A0X
	LOAD_A1X
	LOAD_B0X
	LOAD_B1X
	BF_00
	BF_01
	BF_10
	BF_11
	ADDQ $64, SI
	ADDQ $64, AX
	ADDQ $1024, DI
	ADDQ $1024, CX
	DECQ R11
	JNZ x2loop
	MOVQ 56(R8), SI
	MOVQ 64(R8), DX
	MOVQ DX, AX
	SHLQ $4, AX
	ADDQ SI, AX
	ST_00
	ST_01
	ST_10
	ST_11
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
