import os, sys
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from enc import tileloadd, tilestored, tilezero, tdp
L=[]; A=L.append
def mac(name, bs, comment):
    A('#define %s %s // %s' % (name, '; '.join('BYTE $0x%02X' % x for x in bs), comment))
A("""//go:build !purego

#include "textflag.h"

// AMX tile kernels for the K-quants (layout in amx_amd64.go). The tile
// instructions are written as bytes (the Go assembler has no AMX), each with
// its AT&T mnemonic; TestAMXEncodings disassembles every such line with
// objdump and compares.
//
// amxQK4 / amxQK6 (p *amxQKArgs): one super-block of a tile of 16 weight
// rows, unpacked by unpackQ4KAMX / unpackQ6KAMX (p.w, 8832 bytes, which
// stay in L1 for the whole call), times p.tiles tiles of 16 tokens (p.a: the
// quants of the first tile's super-block in tile order: 4 steps of 16
// tokens x 64 quants, 4 KiB a tile, the tiles of a super-block one after
// another).
// Per token tile: Clo = A . Blo (TDPBSUD) and Chi = A . Bhi (TDPBSSD) over
// 4 steps of 64, so Clo + 256*Chi is the exact integer sum of a * (scale *
// q) over the super-block (Q6_K: scale * (q - 32)); for Q4_K the mins term
// msum = sum(m * bsums32) comes from VPDPWSSD on the token's sums of 32
// activations; then for token t of the tile
//   Q4_K: acc[t] += (d*D[t]) * isum - (dmin*D[t]) * msum
//   Q6_K: acc[t] += (d*D[t]) * isum
// as the references compute them, acc being p.acc (1024 bytes per tile, 64
// per token).
//
// Token tiles go two at a time (2x2 blocking: the two A tiles tmm0 and
// tmm3 and the weight tiles tmm1 (lo) and tmm2 (hi) feed four independent
// accumulators, tmm4/tmm5 for the first tile and tmm6/tmm7 for the
// second), so each weight tile loaded serves two products and the tile
// unit always has a product that does not wait on the one before. The
// vector work on one pair runs while the tile unit multiplies the next: a
// quarter of it follows each of the next pair's 4 steps in program order
// (and it reads the scratch before the next pair's stores). Tile registers
// do not rename, so a tile load waits, and every instruction after it with
// it, until the products reading its register are done: vector work placed
// after all of a pair's products hardly overlapped them (on a
// Sapphire-Rapids-class VM a unit took the tile time plus the vector
// time). An odd last tile goes alone.
// The activations, token scales and sums of one super-block lie tile after
// tile (4096, 64 and 256 bytes apart), so the pair's second tile is a fixed
// offset away.
//
// Registers: SI = the pair's activations, DI = weights, BX = 64 (the
// stride of every tile row), CX = accumulator scratch, R10 / R12 = the
// current pair's token scales and
// sums, R8 = the previous pair's acc, R14 = pairs left, R15 = odd tile;
// Z16-Z19 the mins in pairs, Z24/Z25 d/dmin.

""")
mac('LDTILECFG_AX',[0xC4,0xE2,0x78,0x49,0x00],'ldtilecfg (%rax)')
mac('TILERELEASE',[0xC4,0xE2,0x78,0x49,0xC0],'tilerelease')
for t in (4,5,6,7): mac('TILEZERO_T%d'%t, tilezero(t), 'tilezero %%tmm%d' % t)
def hx(d): return hex(d) if d else ''
for j in range(4):
    d=64*j
    d=1024*j
    mac('LOAD_A%d'%j, tileloadd(0,'rsi','rbx',d), 'tileloadd %s(%%rsi,%%rbx,1),%%tmm0' % hx(d))
    mac('LOAD_B%d'%j, tileloadd(3,'rsi','rbx',4096+d), 'tileloadd %s(%%rsi,%%rbx,1),%%tmm3' % hex(4096+d))
    mac('LOAD_LO%d'%j, tileloadd(1,'rdi','rbx',d), 'tileloadd %s(%%rdi,%%rbx,1),%%tmm1' % hx(d))
    d=4096+1024*j
    mac('LOAD_HI%d'%j, tileloadd(2,'rdi','rbx',d), 'tileloadd %s(%%rdi,%%rbx,1),%%tmm2' % hex(d))
mac('TDPBSUD_T4', tdp('bsud',4,0,1), 'tdpbsud %tmm1,%tmm0,%tmm4')
mac('TDPBSSD_T5', tdp('bssd',5,0,2), 'tdpbssd %tmm2,%tmm0,%tmm5')
mac('TDPBSUD_T6', tdp('bsud',6,3,1), 'tdpbsud %tmm1,%tmm3,%tmm6')
mac('TDPBSSD_T7', tdp('bssd',7,3,2), 'tdpbssd %tmm2,%tmm3,%tmm7')
for t in (4,5,6,7):
    d=1024*(t-4)
    mac('STORE_T%d'%t, tilestored(t,'rcx','rbx',d), 'tilestored %%tmm%d,%s(%%rcx,%%rbx,1)' % (t, hx(d)))
A("""
// Offsets in amxQKArgs.
#define Q_CFG 0
#define Q_A 8
#define Q_W 16
#define Q_DA 24
#define Q_BS 32
#define Q_ACC 40
#define Q_CBUF 48
#define Q_TILES 56

// Offsets in the unpacked weight super-block.
#define W_C16 8192
#define W_D 8704
#define W_DM 8768

// A pair's activations, token scales and sums, and a tile's sums.
#define A_PAIR 8192
#define DA_PAIR 128
#define BS_PAIR 512
#define ACC_PAIR 2048

#define ZERO2 TILEZERO_T4; TILEZERO_T5
#define ZERO4 TILEZERO_T4; TILEZERO_T5; TILEZERO_T6; TILEZERO_T7
#define STORE2 STORE_T4; STORE_T5
#define STORE4 STORE_T4; STORE_T5; STORE_T6; STORE_T7
#define ADVANCE2 ADDQ $A_PAIR, SI; ADDQ $DA_PAIR, R10; ADDQ $BS_PAIR, R12
""")
def STEP2(s):
    """Step s (64 quants) of both token tiles of a pair."""
    return 'LOAD_LO{0}; LOAD_A{0}; TDPBSUD_T4; LOAD_HI{0}; TDPBSSD_T5; LOAD_B{0}; TDPBSUD_T6; TDPBSSD_T7'.format(s)
def STEP1(s):
    """Step s of a lone token tile."""
    return 'LOAD_LO{0}; LOAD_A{0}; TDPBSUD_T4; LOAD_HI{0}; TDPBSSD_T5'.format(s)
def post(kind, cb, da, bs, acc):
    """The vector work of one token: its lo/hi sums at cb(CX), its scale
    at da(R10), its sums of 32 at bs(R12), its acc at acc(R8)."""
    za='Z%d' % (post.n % 4); post.n += 1
    A('\tVPSLLD $8, %d(CX), Z27' % (cb+1024))
    A('\tVPADDD %d(CX), Z27, Z26' % cb)
    if kind=='Q4':
        A('\tVPXORD Z28, Z28, Z28')
        for i in range(4): A('\tVPDPWSSD.BCST %d(R12), Z%d, Z28' % (bs+4*i, 16+i))
    A('\tVMOVUPS %d(R8), %s' % (acc, za))
    A('\tVCVTDQ2PS Z26, Z26')
    A('\tVMULPS.BCST %d(R10), Z24, Z29' % da)
    A('\tVFMADD231PS Z26, Z29, %s' % za)
    if kind=='Q4':
        A('\tVCVTDQ2PS Z28, Z28')
        A('\tVMULPS.BCST %d(R10), Z25, Z29' % da)
        A('\tVFNMADD231PS Z28, Z29, %s' % za)
    A('\tVMOVUPS %s, %d(R8)' % (za, acc))
post.n=0
def post_tile(kind, j, dabase, bsbase):
    """Tile j (0 or 1) of a pair whose scales start dabase from R10 and
    sums bsbase from R12."""
    for t in range(16):
        post(kind, 2048*j+64*t, dabase+64*j+4*t, bsbase+256*j+16*t, 1024*j+64*t)
def post_prev_pair(kind, step=None):
    """The previous pair's vector work (its scales and sums one pair
    back); with step, the tile steps of the current pair go between its
    quarters."""
    A('\t// the previous pair (its scales and sums one pair back)')
    for q in range(4):
        if step:
            A('\t' + step(q))
        j, t0 = q // 2, 8 * (q % 2)
        for t in range(t0, t0 + 8):
            post(kind, 2048*j+64*t, -128+64*j+4*t, -512+256*j+16*t, 1024*j+64*t)
    A('\tADDQ $ACC_PAIR, R8')
for name, kind in (('amxQK4','Q4'),('amxQK6','Q6')):
    p=name
    A("""
// func %s(p *amxQKArgs)
TEXT ·%s(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ Q_CFG(R8), AX
	LDTILECFG_AX
	MOVQ Q_A(R8), SI
	MOVQ Q_W(R8), DI
	MOVQ Q_DA(R8), R10
	MOVQ Q_BS(R8), R12
	MOVQ Q_TILES(R8), R14
	MOVQ Q_CBUF(R8), CX
	MOVQ Q_ACC(R8), R8
	MOVQ $64, BX
	MOVQ R14, R15
	ANDQ $1, R15
	SHRQ $1, R14""" % (name, name))
    if kind=='Q4':
        A('\t// mins (m2i, m2i+1) per row from the c16 pairs (m_i, m_i)')
        A('\tMOVL $0xAAAAAAAA, R9')
        A('\tKMOVD R9, K1')
        for i in range(4):
            A('\tVMOVDQU32 (W_C16+64*%d)(DI), Z%d' % (2*i, 16+i))
            A('\tVMOVDQU16 (W_C16+64*%d)(DI), K1, Z%d' % (2*i+1, 16+i))
        A('\tVMOVUPS W_DM(DI), Z25')
    A('\tVMOVUPS W_D(DI), Z24')
    A('\tTESTQ R14, R14\n\tJZ %s_one' % p)
    A('\tZERO4\n' + ''.join('\t%s\n' % STEP2(i) for i in range(4)) + '\tSTORE4\n\tADVANCE2\n\tDECQ R14\n\tJZ %s_pairsdone' % p)
    A('%s_loop:' % p)
    A('\tZERO4')
    post_prev_pair(kind, STEP2)
    A('\tSTORE4\n\tADVANCE2\n\tDECQ R14\n\tJNZ %s_loop' % p)
    A('%s_pairsdone:' % p)
    A('\tTESTQ R15, R15\n\tJZ %s_lastpair' % p)
    A('\tZERO2')
    post_prev_pair(kind, STEP1)
    A('\tSTORE2')
    A('\t// the odd last tile')
    post_tile(kind, 0, 0, 0)
    A('\tJMP %s_done' % p)
    A('%s_lastpair:' % p)
    post_prev_pair(kind)
    A('\tJMP %s_done' % p)
    A('%s_one:' % p)
    A('\tZERO2\n' + ''.join('\t%s\n' % STEP1(i) for i in range(4)) + '\tSTORE2')
    post_tile(kind, 0, 0, 0)
    A('%s_done:' % p)
    A('\tTILERELEASE\n\tVZEROUPPER\n\tRET')
open(os.path.join(OUT, 'amxk_amd64.s'),'w').write('// Code generated by asmgen/gen_amxk.py; DO NOT EDIT.\n\n'+'\n'.join(L)+'\n')
