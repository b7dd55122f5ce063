import os, sys
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from enc import tileloadd, tilestored, tilezero, tdp

# Loops for BenchmarkAMXMix: which of the tile unit's and the vector unit's
# work runs side by side on this core. Each case is a string of parts, run
# n times:
#   P  4 TDPBSSD on resident tiles (tmm0 x tmm1 -> tmm4..tmm7): 64 cycles
#      of the tile unit at its peak
#   L  4 tile loads into tmm2/tmm3, which no product reads
#   S  4 tile stores of tmm2/tmm3
#   K  one step of the K-quant kernels' 2x2 blocking: lo, A, hi, B loaded
#      (tmm1, tmm0, tmm2, tmm3), each feeding the 4 products that follow
#   Z  the 4 accumulators stored and zeroed, as after a pair's steps
#   F  64 VFMADD231PS, 16 independent chains
#   A  64 VPADDD
#   R  the vector work of 8 tokens of amxQK4 (its Q4_K epilogue as
#      gen_amxk.py's post wrote it when this benchmark was made: a fixed
#      instruction mix, not kept in step with the kernel), reading the sums
#      Z stored
# Tile loads read SI (the benchmark's buffer: zeros or random bytes); Z
# stores and R reads DI = SI+8192; R's token scales and sums are at R8 =
# SI+16384 and its accumulators at R9 = SI+20480.
CASES = ['P', 'L', 'S', 'F', 'A', 'PF', 'PFF', 'PA', 'PL', 'PS', 'LF', 'SF', 'SA',
         'KKKK', 'KKKKZ', 'KFKFKFKFZ', 'KKKKZFFFF', 'RRRR', 'KRKRKRKRZ']

L = []
A = L.append
def mac(name, bs, comment):
    A('#define %s %s // %s' % (name, '; '.join('BYTE $0x%02X' % x for x in bs), comment))
A("""//go:build !purego

#include "textflag.h"

// Loops for BenchmarkAMXMix (asmgen/gen_amxmix.py says what each part
// is): how the tile unit's work and the vector unit's overlap on this
// core, which bounds what the tile kernels can reach. The tile
// instructions are written as bytes with their AT&T mnemonics
// (TestAMXEncodings).
""")
def hx(d): return hex(d) if d else ''
mac('MIX_LDTILECFG', [0xC4,0xE2,0x78,0x49,0x00], 'ldtilecfg (%rax)')
mac('MIX_TILERELEASE', [0xC4,0xE2,0x78,0x49,0xC0], 'tilerelease')
for t in range(8):
    mac('MIX_ZERO%d' % t, tilezero(t), 'tilezero %%tmm%d' % t)
for t in (4,5,6,7):
    mac('MIX_P%d' % t, tdp('bssd',t,0,1), 'tdpbssd %%tmm1,%%tmm0,%%tmm%d' % t)
    d = 1024*(t-4)
    mac('MIX_Z%d' % t, tilestored(t,'rdi','rbx',d), 'tilestored %%tmm%d,%s(%%rdi,%%rbx,1)' % (t, hx(d)))
for i in range(4):
    t, d = 2+i%2, 1024*i
    mac('MIX_L%d' % i, tileloadd(t,'rsi','rbx',d), 'tileloadd %s(%%rsi,%%rbx,1),%%tmm%d' % (hx(d), t))
    mac('MIX_S%d' % i, tilestored(t,'rdi','rbx',d), 'tilestored %%tmm%d,%s(%%rdi,%%rbx,1)' % (t, hx(d)))
mac('MIX_KLO', tileloadd(1,'rsi','rbx',0), 'tileloadd (%rsi,%rbx,1),%tmm1')
mac('MIX_KA', tileloadd(0,'rsi','rbx',4096), 'tileloadd 0x1000(%rsi,%rbx,1),%tmm0')
mac('MIX_KHI', tileloadd(2,'rsi','rbx',1024), 'tileloadd 0x400(%rsi,%rbx,1),%tmm2')
mac('MIX_KB', tileloadd(3,'rsi','rbx',5120), 'tileloadd 0x1400(%rsi,%rbx,1),%tmm3')
mac('MIX_K4', tdp('bsud',4,0,1), 'tdpbsud %tmm1,%tmm0,%tmm4')
mac('MIX_K5', tdp('bssd',5,0,2), 'tdpbssd %tmm2,%tmm0,%tmm5')
mac('MIX_K6', tdp('bsud',6,3,1), 'tdpbsud %tmm1,%tmm3,%tmm6')
mac('MIX_K7', tdp('bssd',7,3,2), 'tdpbssd %tmm2,%tmm3,%tmm7')

def part(c):
    if c == 'P': return ['MIX_P%d' % t for t in (4,5,6,7)]
    if c == 'L': return ['MIX_L%d' % i for i in range(4)]
    if c == 'S': return ['MIX_S%d' % i for i in range(4)]
    if c == 'K': return ['MIX_KLO', 'MIX_KA', 'MIX_K4', 'MIX_KHI', 'MIX_K5', 'MIX_KB', 'MIX_K6', 'MIX_K7']
    if c == 'Z': return ['MIX_Z%d' % t for t in (4,5,6,7)] + ['MIX_ZERO%d' % t for t in (4,5,6,7)]
    if c == 'F': return ['VFMADD231PS Z16, Z17, Z%d' % (i%16) for i in range(64)]
    if c == 'A': return ['VPADDD Z16, Z17, Z%d' % (i%16) for i in range(64)]
    if c == 'R':
        out = []
        for t in range(8):
            za = 'Z%d' % (t%4)
            out += ['VPSLLD $8, %d(DI), Z27' % (64*t+1024), 'VPADDD %d(DI), Z27, Z26' % (64*t), 'VPXORD Z28, Z28, Z28']
            out += ['VPDPWSSD.BCST %d(R8), Z%d, Z28' % (16*t+4*i, 16+i) for i in range(4)]
            out += ['VMOVUPS %d(R9), %s' % (64*t, za), 'VCVTDQ2PS Z26, Z26',
                    'VMULPS.BCST %d(R8), Z24, Z29' % (512+4*t), 'VFMADD231PS Z26, Z29, %s' % za,
                    'VCVTDQ2PS Z28, Z28', 'VMULPS.BCST %d(R8), Z25, Z29' % (512+4*t),
                    'VFNMADD231PS Z28, Z29, %s' % za, 'VMOVUPS %s, %d(R9)' % (za, 64*t)]
        return out
    raise ValueError(c)

for c in CASES:
    name = 'amxMix' + c
    A('// func %s(n int, buf *byte, cfg *tileCfg)' % name)
    A('TEXT ·%s(SB), NOSPLIT, $0-24' % name)
    A('\tMOVQ cfg+16(FP), AX\n\tMIX_LDTILECFG')
    A('\tMOVQ buf+8(FP), SI\n\tLEAQ 8192(SI), DI\n\tLEAQ 16384(SI), R8\n\tLEAQ 20480(SI), R9\n\tMOVQ $64, BX')
    # The product sources tmm0 and tmm1 start with rows of the buffer, so
    # products on resident tiles multiply what the loading cases load.
    for t in range(8):
        A('\t' + ('MIX_KLO' if t == 1 else 'MIX_KA' if t == 0 else 'MIX_ZERO%d' % t))
    for z in range(30):
        A('\tVPXORD Z%d, Z%d, Z%d' % (z, z, z))
    A('\tMOVQ n+0(FP), CX')
    A('%s_loop:' % name)
    for p in c:
        for ins in part(p):
            A('\t' + ins)
    A('\tDECQ CX\n\tJNZ %s_loop' % name)
    A('\tMIX_TILERELEASE\n\tVZEROUPPER\n\tRET\n')

open(os.path.join(OUT, 'amxmix_amd64.s'), 'w').write('// Code generated by asmgen/gen_amxmix.py; DO NOT EDIT.\n\n' + '\n'.join(L) + '\n')
