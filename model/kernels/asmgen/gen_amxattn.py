import os, sys
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from enc import tileloadd, tilestored, tilezero, tdp
L=[]; A=L.append
def mac(name, bs, comment):
    A('#define %s %s // %s' % (name, '; '.join('BYTE $0x%02X' % x for x in bs), comment))
A('''//go:build !purego

#include "textflag.h"

// The products of prefill attention on BF16 tiles (attntile.go). Their
// operands are IEEE halves (f16 keys and values, queries and weights
// rounded to f16), each the sum of two bf16s: hi (rounded to nearest even)
// and lo (the rest, exact: a half has 11 significant bits, a bf16 8). A
// product a.b is al.bh + al.bl + ah.bl + ah.bh, four TDPBF16PS per 32-wide
// chunk of K, which multiply bf16 pairs exactly and sum in f32: the exact
// products of the halves summed in f32, as the vector kernels do. (Without
// al.bl, under 2^-16 of each product, a score is off by up to 2^-16 of the
// sum of its products' magnitudes, which the softmax turns into relative
// errors of the weights: 5e-4 of attention outputs in a random model,
// against 2e-5 with it.)
//
// amxHalfMul(p *amxHalfArgs): C = A . B for 32 rows of A (two row tiles,
// p.ah: hi rows p.lda bytes apart, lo rows p.alo bytes after them) and
// p.npairs pairs of column tiles of B (B tiles of 16 pairs x 16 columns,
// hi at p.bh, lo p.blo bytes after; the next column tile p.bstep bytes on,
// the next chunk of K 1024 bytes on), over p.nc chunks of K. C goes to
// p.out, 32 rows p.ldo bytes apart, 32 columns per pair; with p.acc set it
// is added to what p.out holds (the tiles start from it instead of 0).
//
// Registers: SI = A hi of the chunk, R10 = A lo offset, DX = lda, R11 =
// 16*lda, DI = B hi of the chunk (first column tile of the pair), R12 = B
// lo offset, R13 = bstep, BX = 64, AX and CX addresses, R9 = out, R14 =
// chunks left, R15 = pairs left. tmm0/tmm1 the two A row tiles, tmm2/tmm3
// the two B column tiles, tmm4-7 the accumulators. Each chunk multiplies
// lo A by hi B, lo A by lo B, hi A by lo B and hi A by hi B, reloading one
// side between them: ten tile loads for sixteen products.
''')
mac('LDTILECFG_AX',[0xC4,0xE2,0x78,0x49,0x00],'ldtilecfg (%rax)')
mac('TILERELEASE',[0xC4,0xE2,0x78,0x49,0xC0],'tilerelease')
for t in range(4, 8):
    mac('ZERO_T%d' % t, tilezero(t), 'tilezero %%tmm%d' % t)
mac('LOAD_A0_SI', tileloadd(0,'rsi','rdx',0), 'tileloadd (%rsi,%rdx,1),%tmm0')
mac('LOAD_A0_AX', tileloadd(0,'rax','rdx',0), 'tileloadd (%rax,%rdx,1),%tmm0')
mac('LOAD_A1_AX', tileloadd(1,'rax','rdx',0), 'tileloadd (%rax,%rdx,1),%tmm1')
mac('LOAD_B0_DI', tileloadd(2,'rdi','rbx',0), 'tileloadd (%rdi,%rbx,1),%tmm2')
mac('LOAD_B0_CX', tileloadd(2,'rcx','rbx',0), 'tileloadd (%rcx,%rbx,1),%tmm2')
mac('LOAD_B1_CX', tileloadd(3,'rcx','rbx',0), 'tileloadd (%rcx,%rbx,1),%tmm3')
mac('DP_00', tdp('bf16ps',4,0,2), 'tdpbf16ps %tmm2,%tmm0,%tmm4')
mac('DP_01', tdp('bf16ps',5,0,3), 'tdpbf16ps %tmm3,%tmm0,%tmm5')
mac('DP_10', tdp('bf16ps',6,1,2), 'tdpbf16ps %tmm2,%tmm1,%tmm6')
mac('DP_11', tdp('bf16ps',7,1,3), 'tdpbf16ps %tmm3,%tmm1,%tmm7')
mac('LD_00', tileloadd(4,'rcx','rbx',0), 'tileloadd (%rcx,%rbx,1),%tmm4')
mac('LD_01', tileloadd(5,'rcx','rbx',64), 'tileloadd 0x40(%rcx,%rbx,1),%tmm5')
mac('LD_10', tileloadd(6,'rax','rbx',0), 'tileloadd (%rax,%rbx,1),%tmm6')
mac('LD_11', tileloadd(7,'rax','rbx',64), 'tileloadd 0x40(%rax,%rbx,1),%tmm7')
mac('ST_00', tilestored(4,'rcx','rbx',0), 'tilestored %tmm4,(%rcx,%rbx,1)')
mac('ST_01', tilestored(5,'rcx','rbx',64), 'tilestored %tmm5,0x40(%rcx,%rbx,1)')
mac('ST_10', tilestored(6,'rax','rbx',0), 'tilestored %tmm6,(%rax,%rbx,1)')
mac('ST_11', tilestored(7,'rax','rbx',64), 'tilestored %tmm7,0x40(%rax,%rbx,1)')
A('''
#define DOTS DP_00; DP_01; DP_10; DP_11

TEXT ·amxHalfMul(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), R8
	MOVQ 0(R8), AX
	LDTILECFG_AX
	MOVQ 8(R8), SI
	MOVQ 16(R8), R10
	MOVQ 24(R8), DX
	MOVQ DX, R11
	SHLQ $4, R11
	MOVQ 32(R8), DI
	MOVQ 40(R8), R12
	MOVQ 48(R8), R13
	MOVQ 64(R8), R9
	MOVQ 80(R8), R15
pair:
	MOVQ 88(R8), AX
	TESTQ AX, AX
	JNZ accload
	ZERO_T4
	ZERO_T5
	ZERO_T6
	ZERO_T7
	JMP pairgo
accload:
	MOVQ 72(R8), BX
	MOVQ R9, CX
	MOVQ BX, AX
	SHLQ $4, AX
	ADDQ R9, AX
	LD_00
	LD_01
	LD_10
	LD_11
pairgo:
	MOVQ $64, BX
	MOVQ 56(R8), R14
chunk:
	LEAQ (SI)(R10*1), AX
	LOAD_A0_AX
	ADDQ R11, AX
	LOAD_A1_AX
	LOAD_B0_DI
	LEAQ (DI)(R13*1), CX
	LOAD_B1_CX
	DOTS
	LEAQ (DI)(R12*1), CX
	LOAD_B0_CX
	ADDQ R13, CX
	LOAD_B1_CX
	DOTS
	LOAD_A0_SI
	LEAQ (SI)(R11*1), AX
	LOAD_A1_AX
	DOTS
	LOAD_B0_DI
	LEAQ (DI)(R13*1), CX
	LOAD_B1_CX
	DOTS
	ADDQ $64, SI
	ADDQ $1024, DI
	DECQ R14
	JNZ chunk
	MOVQ 72(R8), BX
	MOVQ R9, CX
	MOVQ BX, AX
	SHLQ $4, AX
	ADDQ R9, AX
	ST_00
	ST_01
	ST_10
	ST_11
	ADDQ $128, R9
	MOVQ 56(R8), AX
	SHLQ $6, AX
	SUBQ AX, SI
	SHLQ $4, AX
	SUBQ AX, DI
	LEAQ (DI)(R13*2), DI
	DECQ R15
	JNZ pair
	TILERELEASE
	RET

''')

def split(name, doc, load, step, label):
    """A split kernel: the bf16 hi and lo parts of 16 values an iteration,
    the values loaded as floats by load from (SI), which then moves step
    bytes."""
    A(doc)
    A("""TEXT ·%(name)s(SB), NOSPLIT, $0-32
	MOVQ hi+0(FP), DI
	MOVQ lo+8(FP), R9
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ %(label)sdone
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z30
	MOVL $1, AX
	VPBROADCASTD AX, Z31
%(label)sloop:
	%(load)s
	VPSRLD $16, Z0, Z1
	VPANDD Z31, Z1, Z1
	VPADDD Z30, Z1, Z1
	VPADDD Z0, Z1, Z1
	VPSRLD $16, Z1, Z1
	VPSLLD $16, Z1, Z2
	VSUBPS Z2, Z0, Z3
	VPSRLD $16, Z3, Z3
	VPMOVDW Z1, (DI)
	VPMOVDW Z3, (R9)
	ADDQ $%(step)d, SI
	ADDQ $32, DI
	ADDQ $32, R9
	DECQ CX
	JNZ %(label)sloop
	VZEROUPPER
%(label)sdone:
	RET
""" % dict(name=name, load=load, step=step, label=label))

split('splitF32BF16', """// func splitF32BF16(hi, lo *uint16, src *float32, n int): the bf16 high
// and low parts of n floats (n a multiple of 16): hi rounded to nearest
// even in integer arithmetic (the Go assembler has no VCVTNEPS2BF16), lo
// the top half of x - hi, exact where x is a half.""", 'VMOVUPS (SI), Z0', 64, 's')
split('splitF16BF16', """
// func splitF16BF16(hi, lo *uint16, src *byte, n int): splitF32BF16 of n
// little-endian halves (n a multiple of 16).""", 'VCVTPH2PS (SI), Z0', 32, 'h')

open(os.path.join(OUT, 'amxattn_amd64.s'), 'w').write('// Code generated by asmgen/gen_amxattn.py; DO NOT EDIT.\n\n'+'\n'.join(L))
