import os, re, sys
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')

# The exact GELU times u (gelu_amd64.s): the AVX2 kernel as written, and the
# AVX-512 one made from it, so the algorithm exists once. The AVX-512 form
# takes 16 values a step (n a multiple of 16), compares into mask
# registers, and computes t = 1/(1 + z/2) with VRCP14PS and one Newton step
# instead of a division.
AVX2 = r'''//go:build !purego

#include "textflag.h"

// func geluErfMulAVX2(y, gate, u *float32, n int): y[i] = gelu(gate[i]) * u[i]
// with the exact (erf) GELU, 8 at a time, n a multiple of 8, in float32:
//   z = |g|/sqrt2, t = 1/(1 + z/2),
//   erfc(z) = t*exp(-z*z - 1.26551223 + t*P(t))   (Numerical Recipes' erfcc,
//                                                  relative error < 1.2e-7)
//   gelu(g) = g - g*erfc(z)/2 for g >= 0, g*erfc(z)/2 for g < 0,
// which keeps the relative accuracy of the tiny values of large negative g;
// exp is Cephes' expf (range reduction by ln2 in two parts, degree-5
// polynomial, 2^n built in the exponent bits; arguments below -87 give 0).
// Against the float64 erfc form: relative error at most 4e-7, about 3 ulps,
// tails included (TestGELUErfMul).

DATA geluC<>+0(SB)/4, $0x3f3504f3   // 1/sqrt2
DATA geluC<>+4(SB)/4, $0x3f000000   // 0.5
DATA geluC<>+8(SB)/4, $0x3f800000   // 1
DATA geluC<>+12(SB)/4, $0x3e2ef945  // 0.17087277
DATA geluC<>+16(SB)/4, $0xbf527892  // -0.82215223
DATA geluC<>+20(SB)/4, $0x3fbe87b0  // 1.48851587
DATA geluC<>+24(SB)/4, $0xbf914e5d  // -1.13520398
DATA geluC<>+28(SB)/4, $0x3e8ec7cc  // 0.27886807
DATA geluC<>+32(SB)/4, $0xbe3ec24c  // -0.18628806
DATA geluC<>+36(SB)/4, $0x3dc636c9  // 0.09678418
DATA geluC<>+40(SB)/4, $0x3ebf88fb  // 0.37409196
DATA geluC<>+44(SB)/4, $0x3f8000c7  // 1.00002368
DATA geluC<>+48(SB)/4, $0xbfa1fc4e  // -1.26551223
DATA geluC<>+52(SB)/4, $0x3fb8aa3b  // log2(e)
DATA geluC<>+56(SB)/4, $0x3f318000  // ln2 high part 0.693359375
DATA geluC<>+60(SB)/4, $0xb95e8083  // ln2 low part -2.12194440e-4
DATA geluC<>+64(SB)/4, $0x39506967  // 1.9875691500e-4
DATA geluC<>+68(SB)/4, $0x3ab743ce  // 1.3981999507e-3
DATA geluC<>+72(SB)/4, $0x3c088908  // 8.3334519073e-3
DATA geluC<>+76(SB)/4, $0x3d2aa9c1  // 4.1665795894e-2
DATA geluC<>+80(SB)/4, $0x3e2aaaaa  // 1.6666665459e-1
DATA geluC<>+84(SB)/4, $0x3f000000  // 5.0000001201e-1
DATA geluC<>+88(SB)/4, $0xc2ae0000  // -87: exp of less is 0 here
DATA geluC<>+92(SB)/4, $0x7fffffff  // |x| mask
GLOBL geluC<>(SB), RODATA|NOPTR, $96

#define BC(off, y) VBROADCASTSS geluC<>+off(SB), y

TEXT ·geluErfMulAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ gdone
	BC(92, Y15)
	BC(0, Y14)
	BC(4, Y13)
	BC(8, Y12)
gloop:
	VMOVUPS (SI), Y0                 // g
	VANDPS Y15, Y0, Y1
	VMULPS Y14, Y1, Y1               // z = |g|/sqrt2
	VMULPS Y13, Y1, Y2
	VADDPS Y12, Y2, Y2
	VDIVPS Y2, Y12, Y2               // t = 1/(1 + z/2)
	BC(12, Y3)                       // P(t) by Horner
	BC(16, Y4)
	VFMADD213PS Y4, Y2, Y3           // Y3 = Y3*t + c
	BC(20, Y4)
	VFMADD213PS Y4, Y2, Y3
	BC(24, Y4)
	VFMADD213PS Y4, Y2, Y3
	BC(28, Y4)
	VFMADD213PS Y4, Y2, Y3
	BC(32, Y4)
	VFMADD213PS Y4, Y2, Y3
	BC(36, Y4)
	VFMADD213PS Y4, Y2, Y3
	BC(40, Y4)
	VFMADD213PS Y4, Y2, Y3
	BC(44, Y4)
	VFMADD213PS Y4, Y2, Y3
	BC(48, Y4)
	VFMADD213PS Y4, Y2, Y3           // -1.26551223 + t*(...)
	// exp(-z*z + c) with c = -1.26551223 + t*P(t): z*z = hi + lo exactly
	// (FMA on g), and the reduction r = (-hi - n*ln2hi) + c - n*ln2lo keeps the
	// digits a float32 sum -hi + c would lose for large z; exp(-lo) is
	// 1 - lo to first order.
	VMULPS Y0, Y0, Y5                // z*z = g*g/2 from g itself: the rounding of
	VMOVAPS Y0, Y11                  // g/sqrt2 would be amplified by exp
	VFMSUB213PS Y5, Y0, Y11          // lo = g*g - hi, exactly
	VMULPS Y13, Y5, Y5               // hi /= 2
	VMULPS Y13, Y11, Y11             // lo /= 2
	VSUBPS Y5, Y3, Y10               // a = c - hi, for n and the cut-off
	BC(52, Y4)
	VMULPS Y4, Y10, Y6
	VROUNDPS $0, Y6, Y6              // n = round(a*log2e)
	BC(56, Y4)
	VMULPS Y4, Y6, Y8
	VADDPS Y8, Y5, Y8
	VSUBPS Y8, Y3, Y3                // r = c - (hi + n*ln2hi), hi + n*ln2hi exact
	BC(60, Y4)
	VFNMADD231PS Y4, Y6, Y3          // r -= n*ln2lo
	BC(64, Y7)
	BC(68, Y4)
	VFMADD213PS Y4, Y3, Y7
	BC(72, Y4)
	VFMADD213PS Y4, Y3, Y7
	BC(76, Y4)
	VFMADD213PS Y4, Y3, Y7
	BC(80, Y4)
	VFMADD213PS Y4, Y3, Y7
	BC(84, Y4)
	VFMADD213PS Y4, Y3, Y7           // p
	VMULPS Y3, Y3, Y8
	VFMADD213PS Y3, Y8, Y7           // p*r*r + r
	VADDPS Y12, Y7, Y7               // e^r
	VCVTPS2DQ Y6, Y6
	VPSLLD $23, Y6, Y6
	VPADDD Y6, Y7, Y7                // * 2^n
	VFNMADD231PS Y11, Y7, Y7         // * (1 - lo)
	BC(88, Y4)
	VCMPPS $1, Y4, Y10, Y8           // a < -87: exp underflows to 0
	VANDNPS Y7, Y8, Y7
	VMULPS Y2, Y7, Y7                // erfc(z) = t*exp(a)
	VMULPS Y13, Y0, Y8               // g/2
	VMULPS Y8, Y7, Y7                // g*erfc/2
	VSUBPS Y7, Y0, Y9                // g - g*erfc/2 (g >= 0)
	VXORPS Y10, Y10, Y10
	VCMPPS $1, Y10, Y0, Y10          // g < 0
	VBLENDVPS Y10, Y7, Y9, Y9
	VMULPS (DX), Y9, Y9
	VMOVUPS Y9, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ gloop
gdone:
	VZEROUPPER
	RET
'''

def avx512(text):
    i = text.index('#define BC(off, y)')
    body = text[i:]
    body = body.replace('#define BC(off, y) VBROADCASTSS geluC<>+off(SB), y', '#define BZ(off, z) VBROADCASTSS geluC<>+off(SB), z')
    body = body.replace('BC(', 'BZ(')
    body = body.replace('TEXT \u00b7geluErfMulAVX2(SB)', 'TEXT \u00b7geluErfMulAVX512(SB)')
    body = body.replace('SHRQ $3, CX', 'SHRQ $4, CX')
    body = body.replace('JZ gdone', 'JZ zdone').replace('gdone:', 'zdone:').replace('gloop', 'zloop')
    body = re.sub(r'\bY(\d+)\b', r'Z\1', body)
    rules = [
        ('\tVDIVPS Z2, Z12, Z2               // t = 1/(1 + z/2)\n',
         '\tVRCP14PS Z2, Z8                  // t = 1/(1 + z/2): 14 bits,\n'
         '\tVMOVAPS Z12, Z9\n'
         '\tVFNMADD231PS Z8, Z2, Z9\n'
         '\tVFMADD213PS Z8, Z8, Z9           // one Newton step: r + r*(1 - d*r)\n'
         '\tVMOVAPS Z9, Z2\n'),
        ('VROUNDPS $0, Z6, Z6              // n = round(a*log2e)',
         'VRNDSCALEPS $0, Z6, Z6           // n = round(a*log2e)'),
        ('\tVCMPPS $1, Z4, Z10, Z8           // a < -87: exp underflows to 0\n\tVANDNPS Z7, Z8, Z7',
         '\tVCMPPS $5, Z4, Z10, K1           // a >= -87 (else exp underflows to 0)\n\tVMOVAPS.Z Z7, K1, Z7'),
        ('\tVCMPPS $1, Z10, Z0, Z10          // g < 0\n\tVBLENDVPS Z10, Z7, Z9, Z9',
         '\tVCMPPS $1, Z10, Z0, K2           // g < 0\n\tVBLENDMPS Z7, Z9, K2, Z9'),
        ('ADDQ $32, SI\n\tADDQ $32, DX\n\tADDQ $32, DI', 'ADDQ $64, SI\n\tADDQ $64, DX\n\tADDQ $64, DI'),
    ]
    for old, new in rules:
        assert body.count(old) == 1, old
        body = body.replace(old, new)
    return body

HDR512 = '''
// func geluErfMulAVX512(y, gate, u *float32, n int): geluErfMulAVX2, 16 at
// a time (n a multiple of 16), the comparisons in mask registers and t from
// VRCP14PS and one Newton step instead of a division (largest relative error
// against the float64 form unchanged, 4e-7; ~12 % faster than with VDIVPS on
// a Sapphire-Rapids-class VM, BenchmarkGELUErfMul).
'''

# llama.cpp's table GEGLU (GELUTableMul): the gate rounded to a half by
# VCVTPS2PH (to nearest even, NaNs quieted with their payload's top bits:
# quant.FP32ToFP16's result), its table entry gathered, the clamps at +-10
# blended in. Both widths written out: the AVX-512 form differs in every
# line that touches a mask.
TABLE = '''
// func geluTableAVX2(y, gate, u, tab *float32, n int): GELUTableMul for n a
// multiple of 8, bit for bit: y = tab[half(g)]*u, x*u where g >= 10, 0
// where g <= -10.
TEXT ·geluTableAVX2(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ tab+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ tdone
	MOVL $0x41200000, AX // 10
	VMOVD AX, X14
	VBROADCASTSS X14, Y14
	MOVL $0xC1200000, AX // -10
	VMOVD AX, X15
	VBROADCASTSS X15, Y15
tloop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VPMOVZXWD X1, Y1
	VPCMPEQD Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPGATHERDD Y2, (R8)(Y1*4), Y3
	VMOVUPS (DX), Y4
	VMULPS Y4, Y3, Y3                // tab*u
	VMULPS Y4, Y0, Y5                // g*u
	VCMPPS $0x1D, Y14, Y0, Y6        // g >= 10
	VBLENDVPS Y6, Y5, Y3, Y3
	VCMPPS $0x12, Y15, Y0, Y7        // g <= -10
	VANDNPS Y3, Y7, Y3
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ tloop
	VZEROUPPER
tdone:
	RET

// func geluTableAVX512(y, gate, u, tab *float32, n int): geluTableAVX2 16 at
// a time (n a multiple of 16).
TEXT ·geluTableAVX512(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ tab+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $4, CX
	JZ zdone
	MOVL $0x41200000, AX // 10
	VPBROADCASTD AX, Z14
	MOVL $0xC1200000, AX // -10
	VPBROADCASTD AX, Z15
zloop:
	VMOVUPS (SI), Z0
	VCVTPS2PH $0, Z0, Y1
	VPMOVZXWD Y1, Z1
	KXNORW K1, K1, K1
	VPGATHERDD (R8)(Z1*4), K1, Z3
	VMOVUPS (DX), Z4
	VMULPS Z4, Z3, Z3                // tab*u
	VCMPPS $0x1D, Z14, Z0, K2        // g >= 10
	VMULPS Z4, Z0, K2, Z3            // g*u there
	VCMPPS $0x12, Z15, Z0, K3        // g <= -10
	VPXORD Z3, Z3, K3, Z3            // 0 there
	VMOVUPS Z3, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	DECQ CX
	JNZ zloop
	VZEROUPPER
zdone:
	RET
'''

text = AVX2 + HDR512 + avx512(AVX2) + TABLE
open(os.path.join(OUT, 'gelu_amd64.s'), 'w').write('// Code generated by asmgen/gen_gelu.py; DO NOT EDIT.\n\n' + text)
