import os, sys
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from enc import tileloadd, tilestored, tilezero, tdp
L=[]; A=L.append
def mac(name, bs, comment):
    A('#define %s %s // %s' % (name, '; '.join('BYTE $0x%02X' % x for x in bs), comment))
A('''//go:build !purego

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

''')
mac('LDTILECFG_AX',[0xC4,0xE2,0x78,0x49,0x00],'ldtilecfg (%rax)')
mac('TILERELEASE',[0xC4,0xE2,0x78,0x49,0xC0],'tilerelease')
for t in (4,5,6,7): mac('TILEZERO_T%d'%t, tilezero(t), 'tilezero %%tmm%d' % t)
for j in range(4):
    d=64*j
    mac('LOAD_A%d'%j, tileloadd(0,'rsi','rdx',d), 'tileloadd %s(%%rsi,%%rdx,1),%%tmm0' % (hex(d) if d else ''))
    d=1024*j
    mac('LOAD_LO%d'%j, tileloadd(1,'rdi','rbx',d), 'tileloadd %s(%%rdi,%%rbx,1),%%tmm1' % (hex(d) if d else ''))
    d=4096+1024*j
    mac('LOAD_HI%d'%j, tileloadd(2,'rdi','rbx',d), 'tileloadd %s(%%rdi,%%rbx,1),%%tmm2' % hex(d))
mac('TDPBSUD_T4', tdp('bsud',4,0,1), 'tdpbsud %tmm1,%tmm0,%tmm4')
mac('TDPBSSD_T5', tdp('bssd',5,0,2), 'tdpbssd %tmm2,%tmm0,%tmm5')
mac('TDPBSUD_T6', tdp('bsud',6,0,1), 'tdpbsud %tmm1,%tmm0,%tmm6')
mac('TDPBSSD_T7', tdp('bssd',7,0,2), 'tdpbssd %tmm2,%tmm0,%tmm7')
mac('STORE_T4', tilestored(4,'rcx','rbx',0), 'tilestored %tmm4,(%rcx,%rbx,1)')
mac('STORE_T5', tilestored(5,'rcx','rbx',1024), 'tilestored %tmm5,0x400(%rcx,%rbx,1)')
mac('STORE_T6', tilestored(6,'rcx','rbx',2048), 'tilestored %tmm6,0x800(%rcx,%rbx,1)')
mac('STORE_T7', tilestored(7,'rcx','rbx',3072), 'tilestored %tmm7,0xc00(%rcx,%rbx,1)')
A('''
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
#define CORR(t) VPXORD Z28, Z28, Z28; \\
	VPDPWSSD.BCST (32*(t)+0)(R8), Z16, Z28; VPDPWSSD.BCST (32*(t)+4)(R8), Z17, Z28; \\
	VPDPWSSD.BCST (32*(t)+8)(R8), Z18, Z28; VPDPWSSD.BCST (32*(t)+12)(R8), Z19, Z28; \\
	VPDPWSSD.BCST (32*(t)+16)(R8), Z20, Z28; VPDPWSSD.BCST (32*(t)+20)(R8), Z21, Z28; \\
	VPDPWSSD.BCST (32*(t)+24)(R8), Z22, Z28; VPDPWSSD.BCST (32*(t)+28)(R8), Z23, Z28
#define POSTQ4(t, za, buf) ISUM(t, buf); CORR(t); VMOVUPS (64*(t))(AX), za; \\
	VCVTDQ2PS Z26, Z26; VMULPS.BCST (4*(t))(R9), Z24, Z29; VFMADD231PS Z26, Z29, za; \\
	VCVTDQ2PS Z28, Z28; VMULPS.BCST (4*(t))(R9), Z25, Z29; VFNMADD231PS Z28, Z29, za; \\
	VMOVUPS za, (64*(t))(AX)
#define POSTQ6(t, za, buf) ISUM(t, buf); VMOVUPS (64*(t))(AX), za; \\
	VCVTDQ2PS Z26, Z26; VMULPS.BCST (4*(t))(R9), Z24, Z29; VFMADD231PS Z26, Z29, za; \\
	VMOVUPS za, (64*(t))(AX)

#define TILES_A \\
	TILEZERO_T4; TILEZERO_T5; \\
	LOAD_A0; LOAD_LO0; LOAD_HI0; TDPBSUD_T4; TDPBSSD_T5; \\
	LOAD_A1; LOAD_LO1; LOAD_HI1; TDPBSUD_T4; TDPBSSD_T5; \\
	LOAD_A2; LOAD_LO2; LOAD_HI2; TDPBSUD_T4; TDPBSSD_T5; \\
	LOAD_A3; LOAD_LO3; LOAD_HI3; TDPBSUD_T4; TDPBSSD_T5
#define TILES_B \\
	TILEZERO_T6; TILEZERO_T7; \\
	LOAD_A0; LOAD_LO0; LOAD_HI0; TDPBSUD_T6; TDPBSSD_T7; \\
	LOAD_A1; LOAD_LO1; LOAD_HI1; TDPBSUD_T6; TDPBSSD_T7; \\
	LOAD_A2; LOAD_LO2; LOAD_HI2; TDPBSUD_T6; TDPBSSD_T7; \\
	LOAD_A3; LOAD_LO3; LOAD_HI3; TDPBSUD_T6; TDPBSSD_T7
#define ADVANCE ADDQ R13, SI; MOVQ R10, R9; ADDQ R14, R10; MOVQ R12, R8; ADDQ R15, R12
''')
def post(kind, buf):
    for t in range(16): A('\tPOST%s(%d, Z%d, %d)' % (kind, t, t%4, buf))
    A('\tADDQ $1024, AX')
for name, kind in (('amxQK4','Q4'),('amxQK6','Q6')):
    p=name
    A('''
// func %s(p *amxQKArgs)
TEXT ·%s(SB), NOSPLIT, $0-8
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
	MOVQ $64, BX''' % (name, name))
    if kind=='Q4':
        for i in range(8): A('\tVMOVDQU32 (W_C16+64*%d)(DI), Z%d' % (i, 16+i))
        A('\tVMOVUPS W_DM(DI), Z25')
    A('\tVMOVUPS W_D(DI), Z24')
    A('\tTILES_A\n\tSTORE_T4\n\tSTORE_T5\n\tADVANCE\n\tDECQ R11\n\tJZ %s_lastA' % p)
    A('%s_loop:' % p)
    A('\tTILES_B')
    post(kind, 0)
    A('\tSTORE_T6\n\tSTORE_T7\n\tADVANCE\n\tDECQ R11\n\tJZ %s_lastB' % p)
    A('\tTILES_A')
    post(kind, 2048)
    A('\tSTORE_T4\n\tSTORE_T5\n\tADVANCE\n\tDECQ R11\n\tJNZ %s_loop' % p)
    A('%s_lastA:' % p)
    post(kind, 0)
    A('\tJMP %s_done' % p)
    A('%s_lastB:' % p)
    post(kind, 2048)
    A('%s_done:' % p)
    A('\tTILERELEASE\n\tVZEROUPPER\n\tRET')
open(os.path.join(OUT, 'amxk_amd64.s'),'w').write('// Code generated by asmgen/gen_amxk.py; DO NOT EDIT.\n\n'+'\n'.join(L)+'\n')
