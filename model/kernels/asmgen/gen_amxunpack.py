import os, sys
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
L=[]
A=L.append
A('''//go:build !purego

#include "textflag.h"

// Unpacking of interleaved (x8) K-quant super-blocks into the AMX weight
// tile of amxQK4 / amxQK6 (layout in amx_amd64.go): for 16 rows (two x8
// groups, g0 and g1) and one super-block, the weights times their
// sub-block scale as two byte planes lo (unsigned) and hi (signed) with
// scale*q = lo + 256*hi (Q6_K: scale*(q-32)), in B-tile order; for Q4_K
// and Q5_K the c16 pairs (min, min) of the mins term; d and dmin as
// float32.
//
// scale*q per byte: VPMADDUBSW of the unsigned quants with [s,0,s,0] and
// [0,s,0,s] per row gives the products of the even and of the odd bytes as
// 16-bit words, which are then split into their low and high bytes.

#define W_C16 8192
#define W_D 8704
#define W_DM 8768

// LOAD2(off, z): z = 32 bytes at off of g0 (rows 0-7) | 32 bytes of g1 (rows 8-15).
#define LOAD2(off, z) VMOVDQU (off)(SI), Y0; VINSERTI64X4 $1, (off)(DX), Z0, z

// EVENODD(zs, ze, zo): from one dword per row holding the scale s in its
// low byte, ze = [s,0,s,0] and zo = [0,s,0,s].
#define EVENODD(zs, ze, zo) VPANDD Z27, zs, zs; VPSLLD $16, zs, ze; VPORD zs, ze, ze; VPSLLD $8, ze, zo

// SPLIT(q, ze, zo, off): scale*q of the unsigned bytes q as lo at off, hi
// at off+4096 (SHIFTHI: VPSRLW for unsigned products, VPSRAW for signed).
#define SPLIT(q, ze, zo, off, SHIFTHI) \\
	VPMADDUBSW ze, q, Z3; VPMADDUBSW zo, q, Z4; \\
	VPSLLW $8, Z4, Z5; VPANDD Z31, Z3, Z6; VPORD Z6, Z5, Z5; \\
	SHIFTHI $8, Z3, Z6; VPANDD Z31, Z6, Z6; VPANDND Z4, Z31, Z7; VPORD Z7, Z6, Z6; \\
	VMOVDQU32 Z5, (off)(DI); VMOVDQU32 Z6, (4096+(off))(DI)

// SPLIT6 is SPLIT for Q6_K: zsub (32*s per 16-bit word) is taken off both
// products first, so the planes hold s*(q-32) and no offset term remains.
#define SPLIT6(q, ze, zo, zsub, off) \\
	VPMADDUBSW ze, q, Z3; VPMADDUBSW zo, q, Z4; VPSUBW zsub, Z3, Z3; VPSUBW zsub, Z4, Z4; \\
	VPSLLW $8, Z4, Z5; VPANDD Z31, Z3, Z6; VPORD Z6, Z5, Z5; \\
	VPSRAW $8, Z3, Z6; VPANDD Z31, Z6, Z6; VPANDND Z4, Z31, Z7; VPORD Z7, Z6, Z6; \\
	VMOVDQU32 Z5, (off)(DI); VMOVDQU32 Z6, (4096+(off))(DI)

#define LOADH(off, z) VMOVDQU (off)(R8), Y0; VINSERTI64X4 $1, (off)(R9), Z0, z

#define CONSTS \\
	MOVL $0x0F0F0F0F, AX; VPBROADCASTD AX, Z28; \\
	MOVL $0x30303030, AX; VPBROADCASTD AX, Z29; \\
	MOVL $0x3F3F3F3F, AX; VPBROADCASTD AX, Z30; \\
	MOVL $0x00FF00FF, AX; VPBROADCASTD AX, Z31; \\
	MOVL $0x000000FF, AX; VPBROADCASTD AX, Z27

// func unpackQ4KAMX(dst, g0, g1 *byte)
TEXT ·unpackQ4KAMX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ g0+8(FP), SI
	MOVQ g1+16(FP), DX
	CONSTS
	VMOVDQU 0(SI), X0
	VINSERTI128 $1, 0(DX), Y0, Y0
	VCVTPH2PS Y0, Z0
	VMOVUPS Z0, W_D(DI)
	VMOVDQU 16(SI), X0
	VINSERTI128 $1, 16(DX), Y0, Y0
	VCVTPH2PS Y0, Z0
	VMOVUPS Z0, W_DM(DI)''')
# scale planes are read from memory as needed: plane k of the 16 rows into X
def plane(k, x):
    return ['\tVMOVQ %d(SI), %s' % (32+8*k, x), '\tVPINSRQ $1, %d(DX), %s, %s' % (32+8*k, x, x)]
def scmin(s):
    out=[]
    if s<4:
        out+=plane(s,'X8')+plane(s+4,'X9')
        out.append('\tVPANDD X30, X8, X20')
        out.append('\tVPANDD X30, X9, X21')
    else:
        out+=plane(s+4,'X8')+plane(s-4,'X9')+plane(s,'X10')
        out.append('\tVPANDD X28, X8, X20')
        out.append('\tVPSRLW $2, X9, X22')
        out.append('\tVPANDD X29, X22, X22')
        out.append('\tVPORD X22, X20, X20')
        out.append('\tVPSRLW $4, X8, X21')
        out.append('\tVPANDD X28, X21, X21')
        out.append('\tVPSRLW $2, X10, X22')
        out.append('\tVPANDD X29, X22, X22')
        out.append('\tVPORD X22, X21, X21')
    return out
for p in range(4):
    for s, (ze, zo) in ((2*p, ('Z16','Z17')), (2*p+1, ('Z18','Z19'))):
        L.extend(scmin(s))
        A('\tVPMOVZXBD X20, Z24')
        A('\tEVENODD(Z24, %s, %s)' % (ze, zo))
        A('\tVPMOVZXBD X21, Z25')
        A('\tVPSLLD $16, Z25, Z26')
        A('\tVPORD Z25, Z26, Z26')
        A('\tVMOVDQU32 Z26, (W_C16+64*%d)(DI)' % s)
    for i in range(8):
        A('\tLOAD2(%d, Z1)' % (128+256*p+32*i))
        A('\tVPANDD Z28, Z1, Z2')
        A('\tVPSRLW $4, Z1, Z1')
        A('\tVPANDD Z28, Z1, Z1')
        A('\tSPLIT(Z2, Z16, Z17, %d, VPSRLW)' % (1024*p+64*i))
        A('\tSPLIT(Z1, Z18, Z19, %d, VPSRLW)' % (1024*p+64*(8+i)))
A('\tVZEROUPPER\n\tRET\n')
A('''// func unpackQ5KAMX(dst, g0, g1, h0, h1 *byte): unpackQ4KAMX for Q5_K,
// whose fifth bits come from h0/h1: the qh bytes of the 16 rows transposed
// like the quants (step i of rows 0-7 at h0+32i, rows 8-15 at h1+32i).
TEXT ·unpackQ5KAMX(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ g0+8(FP), SI
	MOVQ g1+16(FP), DX
	MOVQ h0+24(FP), R8
	MOVQ h1+32(FP), R9
	CONSTS
	MOVL $0x10101010, AX; VPBROADCASTD AX, Z15
	VMOVDQU 0(SI), X0
	VINSERTI128 $1, 0(DX), Y0, Y0
	VCVTPH2PS Y0, Z0
	VMOVUPS Z0, W_D(DI)
	VMOVDQU 16(SI), X0
	VINSERTI128 $1, 16(DX), Y0, Y0
	VCVTPH2PS Y0, Z0
	VMOVUPS Z0, W_DM(DI)''')
for p in range(4):
    for s, (ze, zo) in ((2*p, ('Z16','Z17')), (2*p+1, ('Z18','Z19'))):
        L.extend(scmin(s))
        A('\tVPMOVZXBD X20, Z24')
        A('\tEVENODD(Z24, %s, %s)' % (ze, zo))
        A('\tVPMOVZXBD X21, Z25')
        A('\tVPSLLD $16, Z25, Z26')
        A('\tVPORD Z25, Z26, Z26')
        A('\tVMOVDQU32 Z26, (W_C16+64*%d)(DI)' % s)
    for i in range(8):
        A('\tLOAD2(%d, Z1)' % (128+256*p+32*i))
        A('\tLOADH(%d, Z9)' % (32*i))
        A('\tVPANDD Z28, Z1, Z2')
        A('\tVPSRLW $4, Z1, Z1')
        A('\tVPANDD Z28, Z1, Z1')
        for sh, z in ((2*p, 'Z2'), (2*p+1, 'Z1')):
            if sh < 4: A('\tVPSLLW $%d, Z9, Z10' % (4-sh))
            elif sh > 4: A('\tVPSRLW $%d, Z9, Z10' % (sh-4))
            else: A('\tVMOVDQA64 Z9, Z10')
            A('\tVPANDD Z15, Z10, Z10')
            A('\tVPORD Z10, %s, %s' % (z, z))
        A('\tSPLIT(Z2, Z16, Z17, %d, VPSRLW)' % (1024*p+64*i))
        A('\tSPLIT(Z1, Z18, Z19, %d, VPSRLW)' % (1024*p+64*(8+i)))
A('\tVZEROUPPER\n\tRET\n')
A('''// func unpackQ6KAMX(dst, g0, g1 *byte)
TEXT ·unpackQ6KAMX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ g0+8(FP), SI
	MOVQ g1+16(FP), DX
	CONSTS
	VMOVDQU 0(SI), X0
	VINSERTI128 $1, 0(DX), Y0, Y0
	VCVTPH2PS Y0, Z0
	VMOVUPS Z0, W_D(DI)''')
# c16 pairs: (sc[2i] & 0xffff) | sc[2i+1] << 16, sign-extended scales
def scale(k, z):
    A('\tVMOVQ %d(SI), X24' % (16+8*k))
    A('\tVPINSRQ $1, %d(DX), X24, X24' % (16+8*k))
    A('\tVPMOVSXBD X24, %s' % z)
A('\tMOVL $0x0000FFFF, AX; VPBROADCASTD AX, Z26')
for n in range(2):
    for ig in range(2):
        # scale vectors for indices 8n + {0,2,4,6} + ig
        regs=[('Z16','Z17'),('Z18','Z19'),('Z20','Z21'),('Z22','Z23')]
        subs=['Z11','Z12','Z13','Z14']
        for q,(ze,zo) in enumerate(regs):
            scale(8*n+2*q+ig, 'Z24')
            A('\tVPSLLD $5, Z24, Z25; VPANDD Z26, Z25, Z25; VPSLLD $16, Z25, %s; VPORD Z25, %s, %s' % (subs[q], subs[q], subs[q]))
            A('\tEVENODD(Z24, %s, %s)' % (ze, zo))
        for i in range(4*ig, 4*ig+4):
            o=144+768*n+96*i
            A('\tLOAD2(%d, Z1)' % o)
            A('\tLOAD2(%d, Z2)' % (o+32))
            A('\tLOAD2(%d, Z8)' % (o+64))
            # q1 = (qlA & 0F) | ((qh << 4) & 30)
            A('\tVPANDD Z28, Z1, Z9; VPSLLW $4, Z8, Z10; VPANDD Z29, Z10, Z10; VPORD Z10, Z9, Z9')
            A('\tSPLIT6(Z9, Z16, Z17, Z11, %d)' % (1024*(2*n)+64*i))
            # q2 = (qlB & 0F) | ((qh << 2) & 30)
            A('\tVPANDD Z28, Z2, Z9; VPSLLW $2, Z8, Z10; VPANDD Z29, Z10, Z10; VPORD Z10, Z9, Z9')
            A('\tSPLIT6(Z9, Z18, Z19, Z12, %d)' % (1024*(2*n)+64*(8+i)))
            # q3 = ((qlA >> 4) & 0F) | (qh & 30)
            A('\tVPSRLW $4, Z1, Z9; VPANDD Z28, Z9, Z9; VPANDD Z29, Z8, Z10; VPORD Z10, Z9, Z9')
            A('\tSPLIT6(Z9, Z20, Z21, Z13, %d)' % (1024*(2*n+1)+64*i))
            # q4 = ((qlB >> 4) & 0F) | ((qh >> 2) & 30)
            A('\tVPSRLW $4, Z2, Z9; VPANDD Z28, Z9, Z9; VPSRLW $2, Z8, Z10; VPANDD Z29, Z10, Z10; VPORD Z10, Z9, Z9')
            A('\tSPLIT6(Z9, Z22, Z23, Z14, %d)' % (1024*(2*n+1)+64*(8+i)))
A('\tVZEROUPPER\n\tRET\n')
open(os.path.join(OUT, 'amxunpack_amd64.s'),'w').write('// Code generated by asmgen/gen_amxunpack.py; DO NOT EDIT.\n\n'+'\n'.join(L))
