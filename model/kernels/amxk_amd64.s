//go:build !purego

#include "textflag.h"

// AMX tile kernels for the K-quants (layout in amx_amd64.go). The tile
// instructions are written as bytes (the Go assembler has no AMX), each with
// its AT&T mnemonic; TestAMXEncodings disassembles every such line with
// objdump and compares.
//
// amxQK4 / amxQK6 (p *amxQKArgs): one super-block of a tile of 16 weight
// rows, unpacked by unpackQ4KAMX / unpackQ6KAMX (p.w, 8832 bytes, which
// stay in L1 for the whole call), times p.tiles tiles of 16 tokens (p.a: the
// tile-ordered quants of the first tile's super-block, p.astep bytes to the
// next tile). Per token tile: Clo = A . Blo (TDPBSUD) and Chi = A . Bhi
// (TDPBSSD) over 4 steps of 64, so Clo + 256*Chi is the exact integer sum of
// a * (scale * q) over the super-block (Q6_K: scale * (q - 32)); for Q4_K
// the mins term msum = sum(c16 * bsums) comes from VPDPWSSD; then for token
// t of the tile
//   Q4_K: acc[t] += (d*D[t]) * isum - (dmin*D[t]) * msum
//   Q6_K: acc[t] += (d*D[t]) * isum
// as the references compute them, acc being p.acc (1024 bytes per tile,
// 64 per token). The vector work on one tile runs while the tile unit
// multiplies the next into the other pair of accumulator tiles (tmm4/tmm5
// stored at 0, tmm6/tmm7 at 2048).
//
// Registers: SI = activations, DX = their token stride, DI = weights,
// BX = 64, CX = accumulator scratch, R13/R14/R15 = tile steps of the
// activations, token scales and bsums; R10/R12 the current tile's token
// scales and bsums, R9/R8 the previous tile's, AX the previous tile's acc;
// Z16-Z23 the c16 pairs, Z24/Z25 d/dmin.


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

// Offsets in amxQKArgs.
#define Q_CFG 0
#define Q_A 8
#define Q_W 16
#define Q_DA 24
#define Q_BS 32
#define Q_ACC 40
#define Q_CBUF 48
#define Q_TILES 56
#define Q_ASTEP 64
#define Q_DASTEP 72
#define Q_BSSTEP 80
#define Q_ASTRIDE 88

// Offsets in the unpacked weight super-block.
#define W_C16 8192
#define W_D 8704
#define W_DM 8768

#define ISUM(t, buf) VPSLLD $8, (buf+1024+64*(t))(CX), Z27; VPADDD (buf+64*(t))(CX), Z27, Z26
#define CORR(t) VPXORD Z28, Z28, Z28; \
	VPDPWSSD.BCST (32*(t)+0)(R8), Z16, Z28; VPDPWSSD.BCST (32*(t)+4)(R8), Z17, Z28; \
	VPDPWSSD.BCST (32*(t)+8)(R8), Z18, Z28; VPDPWSSD.BCST (32*(t)+12)(R8), Z19, Z28; \
	VPDPWSSD.BCST (32*(t)+16)(R8), Z20, Z28; VPDPWSSD.BCST (32*(t)+20)(R8), Z21, Z28; \
	VPDPWSSD.BCST (32*(t)+24)(R8), Z22, Z28; VPDPWSSD.BCST (32*(t)+28)(R8), Z23, Z28
#define POSTQ4(t, za, buf) ISUM(t, buf); CORR(t); VMOVUPS (64*(t))(AX), za; \
	VCVTDQ2PS Z26, Z26; VMULPS.BCST (4*(t))(R9), Z24, Z29; VFMADD231PS Z26, Z29, za; \
	VCVTDQ2PS Z28, Z28; VMULPS.BCST (4*(t))(R9), Z25, Z29; VFNMADD231PS Z28, Z29, za; \
	VMOVUPS za, (64*(t))(AX)
#define POSTQ6(t, za, buf) ISUM(t, buf); VMOVUPS (64*(t))(AX), za; \
	VCVTDQ2PS Z26, Z26; VMULPS.BCST (4*(t))(R9), Z24, Z29; VFMADD231PS Z26, Z29, za; \
	VMOVUPS za, (64*(t))(AX)

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
#define ADVANCE ADDQ R13, SI; MOVQ R10, R9; ADDQ R14, R10; MOVQ R12, R8; ADDQ R15, R12


// func amxQK4(p *amxQKArgs)
TEXT ·amxQK4(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ Q_CFG(R8), AX
	LDTILECFG_AX
	MOVQ Q_A(R8), SI
	MOVQ Q_ASTRIDE(R8), DX
	MOVQ Q_W(R8), DI
	MOVQ Q_DA(R8), R10
	MOVQ Q_BS(R8), R12
	MOVQ Q_TILES(R8), R11
	MOVQ Q_CBUF(R8), CX
	MOVQ Q_ASTEP(R8), R13
	MOVQ Q_DASTEP(R8), R14
	MOVQ Q_BSSTEP(R8), R15
	MOVQ Q_ACC(R8), AX
	MOVQ $64, BX
	VMOVDQU32 (W_C16+64*0)(DI), Z16
	VMOVDQU32 (W_C16+64*1)(DI), Z17
	VMOVDQU32 (W_C16+64*2)(DI), Z18
	VMOVDQU32 (W_C16+64*3)(DI), Z19
	VMOVDQU32 (W_C16+64*4)(DI), Z20
	VMOVDQU32 (W_C16+64*5)(DI), Z21
	VMOVDQU32 (W_C16+64*6)(DI), Z22
	VMOVDQU32 (W_C16+64*7)(DI), Z23
	VMOVUPS W_DM(DI), Z25
	VMOVUPS W_D(DI), Z24
	TILES_A
	STORE_T4
	STORE_T5
	ADVANCE
	DECQ R11
	JZ amxQK4_lastA
amxQK4_loop:
	TILES_B
	POSTQ4(0, Z0, 0)
	POSTQ4(1, Z1, 0)
	POSTQ4(2, Z2, 0)
	POSTQ4(3, Z3, 0)
	POSTQ4(4, Z0, 0)
	POSTQ4(5, Z1, 0)
	POSTQ4(6, Z2, 0)
	POSTQ4(7, Z3, 0)
	POSTQ4(8, Z0, 0)
	POSTQ4(9, Z1, 0)
	POSTQ4(10, Z2, 0)
	POSTQ4(11, Z3, 0)
	POSTQ4(12, Z0, 0)
	POSTQ4(13, Z1, 0)
	POSTQ4(14, Z2, 0)
	POSTQ4(15, Z3, 0)
	ADDQ $1024, AX
	STORE_T6
	STORE_T7
	ADVANCE
	DECQ R11
	JZ amxQK4_lastB
	TILES_A
	POSTQ4(0, Z0, 2048)
	POSTQ4(1, Z1, 2048)
	POSTQ4(2, Z2, 2048)
	POSTQ4(3, Z3, 2048)
	POSTQ4(4, Z0, 2048)
	POSTQ4(5, Z1, 2048)
	POSTQ4(6, Z2, 2048)
	POSTQ4(7, Z3, 2048)
	POSTQ4(8, Z0, 2048)
	POSTQ4(9, Z1, 2048)
	POSTQ4(10, Z2, 2048)
	POSTQ4(11, Z3, 2048)
	POSTQ4(12, Z0, 2048)
	POSTQ4(13, Z1, 2048)
	POSTQ4(14, Z2, 2048)
	POSTQ4(15, Z3, 2048)
	ADDQ $1024, AX
	STORE_T4
	STORE_T5
	ADVANCE
	DECQ R11
	JNZ amxQK4_loop
amxQK4_lastA:
	POSTQ4(0, Z0, 0)
	POSTQ4(1, Z1, 0)
	POSTQ4(2, Z2, 0)
	POSTQ4(3, Z3, 0)
	POSTQ4(4, Z0, 0)
	POSTQ4(5, Z1, 0)
	POSTQ4(6, Z2, 0)
	POSTQ4(7, Z3, 0)
	POSTQ4(8, Z0, 0)
	POSTQ4(9, Z1, 0)
	POSTQ4(10, Z2, 0)
	POSTQ4(11, Z3, 0)
	POSTQ4(12, Z0, 0)
	POSTQ4(13, Z1, 0)
	POSTQ4(14, Z2, 0)
	POSTQ4(15, Z3, 0)
	ADDQ $1024, AX
	JMP amxQK4_done
amxQK4_lastB:
	POSTQ4(0, Z0, 2048)
	POSTQ4(1, Z1, 2048)
	POSTQ4(2, Z2, 2048)
	POSTQ4(3, Z3, 2048)
	POSTQ4(4, Z0, 2048)
	POSTQ4(5, Z1, 2048)
	POSTQ4(6, Z2, 2048)
	POSTQ4(7, Z3, 2048)
	POSTQ4(8, Z0, 2048)
	POSTQ4(9, Z1, 2048)
	POSTQ4(10, Z2, 2048)
	POSTQ4(11, Z3, 2048)
	POSTQ4(12, Z0, 2048)
	POSTQ4(13, Z1, 2048)
	POSTQ4(14, Z2, 2048)
	POSTQ4(15, Z3, 2048)
	ADDQ $1024, AX
amxQK4_done:
	TILERELEASE
	VZEROUPPER
	RET

// func amxQK6(p *amxQKArgs)
TEXT ·amxQK6(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ Q_CFG(R8), AX
	LDTILECFG_AX
	MOVQ Q_A(R8), SI
	MOVQ Q_ASTRIDE(R8), DX
	MOVQ Q_W(R8), DI
	MOVQ Q_DA(R8), R10
	MOVQ Q_BS(R8), R12
	MOVQ Q_TILES(R8), R11
	MOVQ Q_CBUF(R8), CX
	MOVQ Q_ASTEP(R8), R13
	MOVQ Q_DASTEP(R8), R14
	MOVQ Q_BSSTEP(R8), R15
	MOVQ Q_ACC(R8), AX
	MOVQ $64, BX
	VMOVUPS W_D(DI), Z24
	TILES_A
	STORE_T4
	STORE_T5
	ADVANCE
	DECQ R11
	JZ amxQK6_lastA
amxQK6_loop:
	TILES_B
	POSTQ6(0, Z0, 0)
	POSTQ6(1, Z1, 0)
	POSTQ6(2, Z2, 0)
	POSTQ6(3, Z3, 0)
	POSTQ6(4, Z0, 0)
	POSTQ6(5, Z1, 0)
	POSTQ6(6, Z2, 0)
	POSTQ6(7, Z3, 0)
	POSTQ6(8, Z0, 0)
	POSTQ6(9, Z1, 0)
	POSTQ6(10, Z2, 0)
	POSTQ6(11, Z3, 0)
	POSTQ6(12, Z0, 0)
	POSTQ6(13, Z1, 0)
	POSTQ6(14, Z2, 0)
	POSTQ6(15, Z3, 0)
	ADDQ $1024, AX
	STORE_T6
	STORE_T7
	ADVANCE
	DECQ R11
	JZ amxQK6_lastB
	TILES_A
	POSTQ6(0, Z0, 2048)
	POSTQ6(1, Z1, 2048)
	POSTQ6(2, Z2, 2048)
	POSTQ6(3, Z3, 2048)
	POSTQ6(4, Z0, 2048)
	POSTQ6(5, Z1, 2048)
	POSTQ6(6, Z2, 2048)
	POSTQ6(7, Z3, 2048)
	POSTQ6(8, Z0, 2048)
	POSTQ6(9, Z1, 2048)
	POSTQ6(10, Z2, 2048)
	POSTQ6(11, Z3, 2048)
	POSTQ6(12, Z0, 2048)
	POSTQ6(13, Z1, 2048)
	POSTQ6(14, Z2, 2048)
	POSTQ6(15, Z3, 2048)
	ADDQ $1024, AX
	STORE_T4
	STORE_T5
	ADVANCE
	DECQ R11
	JNZ amxQK6_loop
amxQK6_lastA:
	POSTQ6(0, Z0, 0)
	POSTQ6(1, Z1, 0)
	POSTQ6(2, Z2, 0)
	POSTQ6(3, Z3, 0)
	POSTQ6(4, Z0, 0)
	POSTQ6(5, Z1, 0)
	POSTQ6(6, Z2, 0)
	POSTQ6(7, Z3, 0)
	POSTQ6(8, Z0, 0)
	POSTQ6(9, Z1, 0)
	POSTQ6(10, Z2, 0)
	POSTQ6(11, Z3, 0)
	POSTQ6(12, Z0, 0)
	POSTQ6(13, Z1, 0)
	POSTQ6(14, Z2, 0)
	POSTQ6(15, Z3, 0)
	ADDQ $1024, AX
	JMP amxQK6_done
amxQK6_lastB:
	POSTQ6(0, Z0, 2048)
	POSTQ6(1, Z1, 2048)
	POSTQ6(2, Z2, 2048)
	POSTQ6(3, Z3, 2048)
	POSTQ6(4, Z0, 2048)
	POSTQ6(5, Z1, 2048)
	POSTQ6(6, Z2, 2048)
	POSTQ6(7, Z3, 2048)
	POSTQ6(8, Z0, 2048)
	POSTQ6(9, Z1, 2048)
	POSTQ6(10, Z2, 2048)
	POSTQ6(11, Z3, 2048)
	POSTQ6(12, Z0, 2048)
	POSTQ6(13, Z1, 2048)
	POSTQ6(14, Z2, 2048)
	POSTQ6(15, Z3, 2048)
	ADDQ $1024, AX
amxQK6_done:
	TILERELEASE
	VZEROUPPER
	RET
