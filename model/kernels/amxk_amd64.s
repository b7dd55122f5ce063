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
#define TILEZERO_T6 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xF0 // tilezero %tmm6
#define TILEZERO_T7 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xF8 // tilezero %tmm7
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
#define TDPBSUD_T6 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5E; BYTE $0xF0 // tdpbsud %tmm1,%tmm0,%tmm6
#define TDPBSSD_T7 BYTE $0xC4; BYTE $0xE2; BYTE $0x6B; BYTE $0x5E; BYTE $0xF8 // tdpbssd %tmm2,%tmm0,%tmm7
#define STORE_T4 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x24; BYTE $0x19 // tilestored %tmm4,(%rcx,%rbx,1)
#define STORE_T5 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0xAC; BYTE $0x19; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // tilestored %tmm5,0x400(%rcx,%rbx,1)
#define STORE_T6 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0xB4; BYTE $0x19; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tilestored %tmm6,0x800(%rcx,%rbx,1)
#define STORE_T7 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0xBC; BYTE $0x19; BYTE $0x00; BYTE $0x0C; BYTE $0x00; BYTE $0x00 // tilestored %tmm7,0xc00(%rcx,%rbx,1)

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
#define A_ASTEP 96

// Per super-block offsets in the unpacked weight tile (PREV: of the
// super-block before the current one).
#define W_SB 8832
#define W_C16 (8192-W_SB)
#define W_D (8704-W_SB)
#define W_DM (8768-W_SB)

// The post-processing of a super-block runs one iteration behind its tile
// products, on the other pair of accumulator tiles (t4/t5 stored at 0,
// t6/t7 at 2048), so the tile unit works on one super-block while the
// vector units finish the previous one. Pointers have already advanced:
// the previous super-block's token scales are at R10-64 and bsums at
// R12-512.
#define ISUM(t, buf) VPSLLD $8, (buf+1024+64*(t))(CX), Z27; VPADDD (buf+64*(t))(CX), Z27, Z26
#define CORR(t) VPXORD Z28, Z28, Z28; \
	VPDPWSSD.BCST (32*(t)-512)(R12), Z16, Z28; VPDPWSSD.BCST (32*(t)+4-512)(R12), Z17, Z28; \
	VPDPWSSD.BCST (32*(t)+8-512)(R12), Z18, Z28; VPDPWSSD.BCST (32*(t)+12-512)(R12), Z19, Z28; \
	VPDPWSSD.BCST (32*(t)+16-512)(R12), Z20, Z28; VPDPWSSD.BCST (32*(t)+20-512)(R12), Z21, Z28; \
	VPDPWSSD.BCST (32*(t)+24-512)(R12), Z22, Z28; VPDPWSSD.BCST (32*(t)+28-512)(R12), Z23, Z28
#define POSTQ4(t, zt, buf) ISUM(t, buf); CORR(t); \
	VCVTDQ2PS Z26, Z26; VMULPS.BCST (4*(t)-64)(R10), Z24, Z29; VFMADD231PS Z26, Z29, zt; \
	VCVTDQ2PS Z28, Z28; VMULPS.BCST (4*(t)-64)(R10), Z25, Z29; VFNMADD231PS Z28, Z29, zt
#define POSTQ6(t, zt, buf) ISUM(t, buf); \
	VCVTDQ2PS Z26, Z26; VMULPS.BCST (4*(t)-64)(R10), Z24, Z29; VFMADD231PS Z26, Z29, zt

// TILES(lo, hi, ...) multiplies the current super-block into one pair.
#define TILES_A \
	TILEZERO_T4; TILEZERO_T5; \
	LOAD_A0; LOAD_LO0; LOAD_HI0; TDPBSUD_T4; TDPBSSD_T5; \
	LOAD_A1; LOAD_LO1; LOAD_HI1; TDPBSUD_T4; TDPBSSD_T5; \
	LOAD_A2; LOAD_LO2; LOAD_HI2; TDPBSUD_T4; TDPBSSD_T5; \
	LOAD_A3; LOAD_LO3; LOAD_HI3; TDPBSUD_T4; TDPBSSD_T5
#define TILES_B \
	TILEZERO_T6; TILEZERO_T7; \
	LOAD_A0; LOAD_LO0; LOAD_HI0; TDPBSUD_T6; TDPBSSD_T7; \
	LOAD_A1; LOAD_LO1; LOAD_HI1; TDPBSUD_T6; TDPBSSD_T7; \
	LOAD_A2; LOAD_LO2; LOAD_HI2; TDPBSUD_T6; TDPBSSD_T7; \
	LOAD_A3; LOAD_LO3; LOAD_HI3; TDPBSUD_T6; TDPBSSD_T7
#define ADVANCE ADDQ R13, SI; ADDQ $W_SB, DI; ADDQ $64, R10; ADDQ $512, R12


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
	MOVQ A_ASTEP(R8), R13
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
	TILES_A
	STORE_T4
	STORE_T5
	ADVANCE
	DECQ R11
	JZ amxQK4_lastA
amxQK4_loop:
	TILES_B
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
	POSTQ4(0, Z0, 0)
	POSTQ4(1, Z1, 0)
	POSTQ4(2, Z2, 0)
	POSTQ4(3, Z3, 0)
	POSTQ4(4, Z4, 0)
	POSTQ4(5, Z5, 0)
	POSTQ4(6, Z6, 0)
	POSTQ4(7, Z7, 0)
	POSTQ4(8, Z8, 0)
	POSTQ4(9, Z9, 0)
	POSTQ4(10, Z10, 0)
	POSTQ4(11, Z11, 0)
	POSTQ4(12, Z12, 0)
	POSTQ4(13, Z13, 0)
	POSTQ4(14, Z14, 0)
	POSTQ4(15, Z15, 0)
	STORE_T6
	STORE_T7
	ADVANCE
	DECQ R11
	JZ amxQK4_lastB
	TILES_A
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
	POSTQ4(0, Z0, 2048)
	POSTQ4(1, Z1, 2048)
	POSTQ4(2, Z2, 2048)
	POSTQ4(3, Z3, 2048)
	POSTQ4(4, Z4, 2048)
	POSTQ4(5, Z5, 2048)
	POSTQ4(6, Z6, 2048)
	POSTQ4(7, Z7, 2048)
	POSTQ4(8, Z8, 2048)
	POSTQ4(9, Z9, 2048)
	POSTQ4(10, Z10, 2048)
	POSTQ4(11, Z11, 2048)
	POSTQ4(12, Z12, 2048)
	POSTQ4(13, Z13, 2048)
	POSTQ4(14, Z14, 2048)
	POSTQ4(15, Z15, 2048)
	STORE_T4
	STORE_T5
	ADVANCE
	DECQ R11
	JNZ amxQK4_loop
amxQK4_lastA:
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
	POSTQ4(0, Z0, 0)
	POSTQ4(1, Z1, 0)
	POSTQ4(2, Z2, 0)
	POSTQ4(3, Z3, 0)
	POSTQ4(4, Z4, 0)
	POSTQ4(5, Z5, 0)
	POSTQ4(6, Z6, 0)
	POSTQ4(7, Z7, 0)
	POSTQ4(8, Z8, 0)
	POSTQ4(9, Z9, 0)
	POSTQ4(10, Z10, 0)
	POSTQ4(11, Z11, 0)
	POSTQ4(12, Z12, 0)
	POSTQ4(13, Z13, 0)
	POSTQ4(14, Z14, 0)
	POSTQ4(15, Z15, 0)
	JMP amxQK4_store
amxQK4_lastB:
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
	POSTQ4(0, Z0, 2048)
	POSTQ4(1, Z1, 2048)
	POSTQ4(2, Z2, 2048)
	POSTQ4(3, Z3, 2048)
	POSTQ4(4, Z4, 2048)
	POSTQ4(5, Z5, 2048)
	POSTQ4(6, Z6, 2048)
	POSTQ4(7, Z7, 2048)
	POSTQ4(8, Z8, 2048)
	POSTQ4(9, Z9, 2048)
	POSTQ4(10, Z10, 2048)
	POSTQ4(11, Z11, 2048)
	POSTQ4(12, Z12, 2048)
	POSTQ4(13, Z13, 2048)
	POSTQ4(14, Z14, 2048)
	POSTQ4(15, Z15, 2048)
amxQK4_store:
	TILERELEASE
	MOVQ A_OUT(R8), AX
	MOVQ A_LDO(R8), DX
	MOVQ A_NTOK(R8), CX
	VMOVUPS Z0, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z1, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z2, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z3, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z4, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z5, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z6, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z7, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z8, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z9, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z10, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z11, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z12, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z13, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z14, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
	VMOVUPS Z15, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK4_done
amxQK4_done:
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
	MOVQ A_ASTEP(R8), R13
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
	TILES_A
	STORE_T4
	STORE_T5
	ADVANCE
	DECQ R11
	JZ amxQK6_lastA
amxQK6_loop:
	TILES_B
	VMOVUPS W_D(DI), Z24
	POSTQ6(0, Z0, 0)
	POSTQ6(1, Z1, 0)
	POSTQ6(2, Z2, 0)
	POSTQ6(3, Z3, 0)
	POSTQ6(4, Z4, 0)
	POSTQ6(5, Z5, 0)
	POSTQ6(6, Z6, 0)
	POSTQ6(7, Z7, 0)
	POSTQ6(8, Z8, 0)
	POSTQ6(9, Z9, 0)
	POSTQ6(10, Z10, 0)
	POSTQ6(11, Z11, 0)
	POSTQ6(12, Z12, 0)
	POSTQ6(13, Z13, 0)
	POSTQ6(14, Z14, 0)
	POSTQ6(15, Z15, 0)
	STORE_T6
	STORE_T7
	ADVANCE
	DECQ R11
	JZ amxQK6_lastB
	TILES_A
	VMOVUPS W_D(DI), Z24
	POSTQ6(0, Z0, 2048)
	POSTQ6(1, Z1, 2048)
	POSTQ6(2, Z2, 2048)
	POSTQ6(3, Z3, 2048)
	POSTQ6(4, Z4, 2048)
	POSTQ6(5, Z5, 2048)
	POSTQ6(6, Z6, 2048)
	POSTQ6(7, Z7, 2048)
	POSTQ6(8, Z8, 2048)
	POSTQ6(9, Z9, 2048)
	POSTQ6(10, Z10, 2048)
	POSTQ6(11, Z11, 2048)
	POSTQ6(12, Z12, 2048)
	POSTQ6(13, Z13, 2048)
	POSTQ6(14, Z14, 2048)
	POSTQ6(15, Z15, 2048)
	STORE_T4
	STORE_T5
	ADVANCE
	DECQ R11
	JNZ amxQK6_loop
amxQK6_lastA:
	VMOVUPS W_D(DI), Z24
	POSTQ6(0, Z0, 0)
	POSTQ6(1, Z1, 0)
	POSTQ6(2, Z2, 0)
	POSTQ6(3, Z3, 0)
	POSTQ6(4, Z4, 0)
	POSTQ6(5, Z5, 0)
	POSTQ6(6, Z6, 0)
	POSTQ6(7, Z7, 0)
	POSTQ6(8, Z8, 0)
	POSTQ6(9, Z9, 0)
	POSTQ6(10, Z10, 0)
	POSTQ6(11, Z11, 0)
	POSTQ6(12, Z12, 0)
	POSTQ6(13, Z13, 0)
	POSTQ6(14, Z14, 0)
	POSTQ6(15, Z15, 0)
	JMP amxQK6_store
amxQK6_lastB:
	VMOVUPS W_D(DI), Z24
	POSTQ6(0, Z0, 2048)
	POSTQ6(1, Z1, 2048)
	POSTQ6(2, Z2, 2048)
	POSTQ6(3, Z3, 2048)
	POSTQ6(4, Z4, 2048)
	POSTQ6(5, Z5, 2048)
	POSTQ6(6, Z6, 2048)
	POSTQ6(7, Z7, 2048)
	POSTQ6(8, Z8, 2048)
	POSTQ6(9, Z9, 2048)
	POSTQ6(10, Z10, 2048)
	POSTQ6(11, Z11, 2048)
	POSTQ6(12, Z12, 2048)
	POSTQ6(13, Z13, 2048)
	POSTQ6(14, Z14, 2048)
	POSTQ6(15, Z15, 2048)
amxQK6_store:
	TILERELEASE
	MOVQ A_OUT(R8), AX
	MOVQ A_LDO(R8), DX
	MOVQ A_NTOK(R8), CX
	VMOVUPS Z0, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z1, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z2, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z3, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z4, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z5, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z6, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z7, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z8, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z9, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z10, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z11, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z12, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z13, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z14, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
	VMOVUPS Z15, (AX)
	ADDQ DX, AX
	DECQ CX
	JZ amxQK6_done
amxQK6_done:
	VZEROUPPER
	RET
