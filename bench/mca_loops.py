#!/usr/bin/env python3
# Helper of bench/arm64-mca.sh: extracts loops of one function from
# `aarch64-linux-gnu-objdump -d --no-show-raw-insn` output for llvm-mca.
#
#   mca_loops.py DIS FUNC first-bne OUT
#       the body from the target of FUNC's first b.ne to it (droidgo's
#       kernels: their block loop)
#   mca_loops.py DIS FUNC first-back OUT
#       the same for FUNC's first backward branch of any kind (the float
#       one-token kernels, whose main loop ends in an unconditional b)
#   mca_loops.py DIS FUNC hot INNER OUTER
#       the innermost loop with the most SMMLA/SDOT instructions into INNER,
#       and the rest of the smallest loop enclosing it into OUTER; prints
#       the MAC instructions of the inner loop as "smmla sdot"
import re, sys

def load(dis, fn):
    lines, inside = [], False
    for l in open(dis):
        if re.match(r'^[0-9a-f]+ <' + re.escape(fn) + r'>:', l):
            inside = True
            continue
        if inside:
            m = re.match(r'^\s+([0-9a-f]+):\s+(.*)$', l)
            if not m:
                if lines:
                    break
                continue
            lines.append((int(m.group(1), 16), m.group(2).split('//')[0].strip()))
    if not lines:
        sys.exit(f"mca_loops.py: no function {fn}")
    return lines

BR = re.compile(r'^(b\.\w+|cbnz|cbz|tbnz|tbz|b)\s')

def clean(body):
    return [re.sub(r'\s+<.*>$', '', t) for _, t in body if not BR.match(t)]

dis, fn, mode = sys.argv[1], sys.argv[2], sys.argv[3]
lines = load(dis, fn)
at = {a: i for i, (a, _) in enumerate(lines)}
def target(t):
    return int(re.findall(r'\b([0-9a-f]+)\b', t.split(None, 1)[1])[-1], 16)
if mode in ('first-bne', 'first-back'):
    if mode == 'first-bne':
        i = [i for i, (_, t) in enumerate(lines) if t.startswith('b.ne')][0]
    else:
        i = [i for i, (a, t) in enumerate(lines) if BR.match(t) and target(t) < a][0]
    s = at[target(lines[i][1])]
    open(sys.argv[4], 'w').write('\n'.join(clean(lines[s:i + 1])) + '\n')
    sys.exit(0)
loops = []
for i, (a, t) in enumerate(lines):
    m = BR.match(t)
    if m:
        tgt = target(t)
        if tgt < a and tgt in at:
            loops.append((at[tgt], i))
def macs(s, e):
    body = [t for _, t in lines[s:e + 1]]
    return sum(t.startswith('smmla') for t in body), sum(t.startswith('sdot') for t in body)
def innermost(s, e):
    return not any(BR.match(t) for _, t in lines[s:e])
inner = max((l for l in loops if innermost(*l)), key=lambda l: sum(macs(*l)))
outer = min((l for l in loops if l[0] <= inner[0] and l[1] > inner[1]), key=lambda l: l[1] - l[0])
open(sys.argv[4], 'w').write('\n'.join(clean(lines[inner[0]:inner[1] + 1])) + '\n')
rest = lines[outer[0]:inner[0]] + lines[inner[1] + 1:outer[1] + 1]
open(sys.argv[5], 'w').write('\n'.join(clean(rest)) + '\n')
print(*macs(*inner))
