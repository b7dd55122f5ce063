//go:build !purego

#include "textflag.h"

// AMX tile kernels for the K-quants (see amx_amd64.go for the layout). The
// tile instructions are written as bytes (the Go assembler has no AMX), each
// with its AT&T mnemonic; TestAMXEncodings disassembles every such line
// with objdump and compares.
//
// amxQK4 / amxQK6 (p *amxArgs): one tile of 16 weight rows unpacked by
// unpackQ4KAMX / unpackQ6KAMX (p.w, 8832 bytes per super-block) times up
// to 16 tokens (p.a: the Q8_K quants of the first token, p.astride the
// token stride). Per super-block: Clo = A . Blo (TDPBSUD) and Chi = A . Bhi
// (TDPBSSD) over 4 steps of 64, so Clo + 256*Chi is the exact integer sum of
// a * (scale * q) over the super-block; the min (Q4_K) or -32 offset (Q6_K)
// term is sum(c16 * bsums) with VPDPWSSD; then for token t
//   Q4_K: out[t] += (d*D[t]) * isum - (dmin*D[t]) * msum
//   Q6_K: out[t] += (d*D[t]) * (isum - 32*corr)
// as the references compute them. Registers: SI = activations, DX =
// token stride, DI = weight tile, BX = 64, CX = accumulator scratch (Clo at
// 0, Chi at 1024), R10 = token scales, R12 = token bsums, Z0-Z15 the 16
// tokens' sums, Z16-Z23 the c16 pairs, Z24/Z25 d/dmin.

#define LDTILECFG_AX BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg (%rax)
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0 // tilerelease

#define TILEZERO_T4 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE0 // tilezero %tmm4
#define TILEZERO_T5 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE8 // tilezero %tmm5
#define LOAD_A0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x16 // tileloadd (%rsi,%rdx,1),%tmm0
#define LOAD_LO0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x1F // tileloadd (%rdi,%rbx,1),%tmm1
#define LOAD_HI0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x94; BYTE $0x1F; BYTE $0x00; BYTE $0x10; BYTE $0x00; BYTE $0x00 // tileloadd 0x1000(%rdi,%rbx,1),%tmm2
#define LOAD_A1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x44; BYTE $0x16; BYTE $0x40 // tileloadd 0x40(%rsi,%rdx,1),%tmm0
#define LOAD_LO1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x8C; BYTE $0x1F; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // tileloadd 0x400(%rdi,%rbx,1),%tmm1
#define LOAD_HI1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x94; BYTE $0x1F; BYTE $0x00; BYTE $0x14; BYTE $0x00; BYTE $0x00 // tileloadd 0x1400(%rdi,%rbx,1),%tmm2
#define LOAD_A2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x84; BYTE $0x16; BYTE $0x80; BYTE $0x00; BYTE $0x00; BYTE $0x00 // tileloadd 0x80(%rsi,%rdx,1),%tmm0
#define LOAD_LO2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x8C; BYTE $0x1F; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tileloadd 0x800(%rdi,%rbx,1),%tmm1
#define LOAD_HI2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x94; BYTE $0x1F; BYTE $0x00; BYTE $0x18; BYTE $0x00; BYTE $0x00 // tileloadd 0x1800(%rdi,%rbx,1),%tmm2
#define LOAD_A3 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x84; BYTE $0x16; BYTE $0xC0; BYTE $0x00; BYTE $0x00; BYTE $0x00 // tileloadd 0xc0(%rsi,%rdx,1),%tmm0
#define LOAD_LO3 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x8C; BYTE $0x1F; BYTE $0x00; BYTE $0x0C; BYTE $0x00; BYTE $0x00 // tileloadd 0xc00(%rdi,%rbx,1),%tmm1
#define LOAD_HI3 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x94; BYTE $0x1F; BYTE $0x00; BYTE $0x1C; BYTE $0x00; BYTE $0x00 // tileloadd 0x1c00(%rdi,%rbx,1),%tmm2
#define TDPBSUD_T4 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5E; BYTE $0xE0 // tdpbsud %tmm1,%tmm0,%tmm4
#define TDPBSSD_T5 BYTE $0xC4; BYTE $0xE2; BYTE $0x6B; BYTE $0x5E; BYTE $0xE8 // tdpbssd %tmm2,%tmm0,%tmm5
#define STORE_CLO BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x24; BYTE $0x19 // tilestored %tmm4,(%rcx,%rbx,1)
#define STORE_CHI BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0xAC; BYTE $0x19; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // tilestored %tmm5,0x400(%rcx,%rbx,1)

#define A_CFG 0
#define A_A 8
#define A_ASTRIDE 16
#define A_W 24
#define A_DA 40
#define A_NB 48
#define A_OUT 56
#define A_LDO 64
#define A_NTOK 72
#define A_CBUF 80
#define A_AUX 88

// Per super-block offsets in the unpacked weight tile.
#define W_C16 8192
#define W_D 8704
#define W_DM 8768
#define W_SB 8832

// ISUM(t): Z26 = Clo[t] + 256*Chi[t]; CORR(t): Z28 = sum of c16 pairs times
// token t's bsum pairs.
#define ISUM(t) VPSLLD $8, (1024+64*(t))(CX), Z27; VPADDD (64*(t))(CX), Z27, Z26
#define CORR(t) VPXORD Z28, Z28, Z28; \
	VPDPWSSD.BCST (32*(t)+0)(R12), Z16, Z28; VPDPWSSD.BCST (32*(t)+4)(R12), Z17, Z28; \
	VPDPWSSD.BCST (32*(t)+8)(R12), Z18, Z28; VPDPWSSD.BCST (32*(t)+12)(R12), Z19, Z28; \
	VPDPWSSD.BCST (32*(t)+16)(R12), Z20, Z28; VPDPWSSD.BCST (32*(t)+20)(R12), Z21, Z28; \
	VPDPWSSD.BCST (32*(t)+24)(R12), Z22, Z28; VPDPWSSD.BCST (32*(t)+28)(R12), Z23, Z28
#define POSTQ4(t, zt) ISUM(t); CORR(t); \
	VCVTDQ2PS Z26, Z26; VMULPS.BCST (4*(t))(R10), Z24, Z29; VFMADD231PS Z26, Z29, zt; \
	VCVTDQ2PS Z28, Z28; VMULPS.BCST (4*(t))(R10), Z25, Z29; VFNMADD231PS Z28, Z29, zt
#define POSTQ6(t, zt) ISUM(t); CORR(t); \
	VPSLLD $5, Z28, Z28; VPSUBD Z28, Z26, Z26; \
	VCVTDQ2PS Z26, Z26; VMULPS.BCST (4*(t))(R10), Z24, Z29; VFMADD231PS Z26, Z29, zt

#define STORE_ACC(zt) VMOVUPS zt, (AX); ADDQ DX, AX; DECQ CX; JZ done
#define STORE_ACC6(zt) VMOVUPS zt, (AX); ADDQ DX, AX; DECQ CX; JZ done6

// TILES multiplies one super-block: Clo, Chi stored to the scratch.
#define TILES \
	TILEZERO_T4; TILEZERO_T5; \
	LOAD_A0; LOAD_LO0; LOAD_HI0; TDPBSUD_T4; TDPBSSD_T5; \
	LOAD_A1; LOAD_LO1; LOAD_HI1; TDPBSUD_T4; TDPBSSD_T5; \
	LOAD_A2; LOAD_LO2; LOAD_HI2; TDPBSUD_T4; TDPBSSD_T5; \
	LOAD_A3; LOAD_LO3; LOAD_HI3; TDPBSUD_T4; TDPBSSD_T5; \
	STORE_CLO; STORE_CHI


// func amxQK4(p *amxArgs)
TEXT ·amxQK4(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ A_CFG(R8), AX
	LDTILECFG_AX
	MOVQ A_A(R8), SI
	MOVQ A_ASTRIDE(R8), DX
	MOVQ A_W(R8), DI
	MOVQ A_DA(R8), R10
	MOVQ A_AUX(R8), R12
	MOVQ A_NB(R8), R11
	MOVQ A_CBUF(R8), CX
	MOVQ $64, BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
amxQK4loop:
	TILES
	VMOVDQU32 (W_C16+64*0)(DI), Z16
	VMOVDQU32 (W_C16+64*1)(DI), Z17
	VMOVDQU32 (W_C16+64*2)(DI), Z18
	VMOVDQU32 (W_C16+64*3)(DI), Z19
	VMOVDQU32 (W_C16+64*4)(DI), Z20
	VMOVDQU32 (W_C16+64*5)(DI), Z21
	VMOVDQU32 (W_C16+64*6)(DI), Z22
	VMOVDQU32 (W_C16+64*7)(DI), Z23
	VMOVUPS W_D(DI), Z24
	VMOVUPS W_DM(DI), Z25
	POSTQ4(0, Z0)
	POSTQ4(1, Z1)
	POSTQ4(2, Z2)
	POSTQ4(3, Z3)
	POSTQ4(4, Z4)
	POSTQ4(5, Z5)
	POSTQ4(6, Z6)
	POSTQ4(7, Z7)
	POSTQ4(8, Z8)
	POSTQ4(9, Z9)
	POSTQ4(10, Z10)
	POSTQ4(11, Z11)
	POSTQ4(12, Z12)
	POSTQ4(13, Z13)
	POSTQ4(14, Z14)
	POSTQ4(15, Z15)
	ADDQ $292, SI
	ADDQ $W_SB, DI
	ADDQ $64, R10
	ADDQ $512, R12
	DECQ R11
	JNZ amxQK4loop
	TILERELEASE
	MOVQ A_OUT(R8), AX
	MOVQ A_LDO(R8), DX
	MOVQ A_NTOK(R8), CX
	STORE_ACC(Z0)
	STORE_ACC(Z1)
	STORE_ACC(Z2)
	STORE_ACC(Z3)
	STORE_ACC(Z4)
	STORE_ACC(Z5)
	STORE_ACC(Z6)
	STORE_ACC(Z7)
	STORE_ACC(Z8)
	STORE_ACC(Z9)
	STORE_ACC(Z10)
	STORE_ACC(Z11)
	STORE_ACC(Z12)
	STORE_ACC(Z13)
	STORE_ACC(Z14)
	STORE_ACC(Z15)
done:
	VZEROUPPER
	RET

// func amxQK6(p *amxArgs)
TEXT ·amxQK6(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ A_CFG(R8), AX
	LDTILECFG_AX
	MOVQ A_A(R8), SI
	MOVQ A_ASTRIDE(R8), DX
	MOVQ A_W(R8), DI
	MOVQ A_DA(R8), R10
	MOVQ A_AUX(R8), R12
	MOVQ A_NB(R8), R11
	MOVQ A_CBUF(R8), CX
	MOVQ $64, BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
amxQK6loop:
	TILES
	VMOVDQU32 (W_C16+64*0)(DI), Z16
	VMOVDQU32 (W_C16+64*1)(DI), Z17
	VMOVDQU32 (W_C16+64*2)(DI), Z18
	VMOVDQU32 (W_C16+64*3)(DI), Z19
	VMOVDQU32 (W_C16+64*4)(DI), Z20
	VMOVDQU32 (W_C16+64*5)(DI), Z21
	VMOVDQU32 (W_C16+64*6)(DI), Z22
	VMOVDQU32 (W_C16+64*7)(DI), Z23
	VMOVUPS W_D(DI), Z24
	POSTQ6(0, Z0)
	POSTQ6(1, Z1)
	POSTQ6(2, Z2)
	POSTQ6(3, Z3)
	POSTQ6(4, Z4)
	POSTQ6(5, Z5)
	POSTQ6(6, Z6)
	POSTQ6(7, Z7)
	POSTQ6(8, Z8)
	POSTQ6(9, Z9)
	POSTQ6(10, Z10)
	POSTQ6(11, Z11)
	POSTQ6(12, Z12)
	POSTQ6(13, Z13)
	POSTQ6(14, Z14)
	POSTQ6(15, Z15)
	ADDQ $292, SI
	ADDQ $W_SB, DI
	ADDQ $64, R10
	ADDQ $512, R12
	DECQ R11
	JNZ amxQK6loop
	TILERELEASE
	MOVQ A_OUT(R8), AX
	MOVQ A_LDO(R8), DX
	MOVQ A_NTOK(R8), CX
	STORE_ACC6(Z0)
	STORE_ACC6(Z1)
	STORE_ACC6(Z2)
	STORE_ACC6(Z3)
	STORE_ACC6(Z4)
	STORE_ACC6(Z5)
	STORE_ACC6(Z6)
	STORE_ACC6(Z7)
	STORE_ACC6(Z8)
	STORE_ACC6(Z9)
	STORE_ACC6(Z10)
	STORE_ACC6(Z11)
	STORE_ACC6(Z12)
	STORE_ACC6(Z13)
	STORE_ACC6(Z14)
	STORE_ACC6(Z15)
done6:
	VZEROUPPER
	RET
