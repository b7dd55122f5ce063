#!/usr/bin/env python3
# Helper of bench/arm64-proxy.sh: reads the runs' plugin logs, computes
# instructions per token by difference, finds the hot blocks' code, asks
# llvm-mca for their cycles and prints the tables (markdown) on stdout;
# OUT/results.json and OUT/hot.md hold the details.
#
#   arm64_proxy.py OUT MCA HOT CPU... -- CASE...
import json, os, re, subprocess, sys

out, mca, hot = sys.argv[1], sys.argv[2], int(sys.argv[3])
sep = sys.argv.index('--')
cpus, cases = sys.argv[4:sep], sys.argv[sep + 1:]
meta = {}
for l in open(os.path.join(out, 'meta')):
    k, _, v = l.rstrip('\n').partition(' ')
    meta.setdefault(k, v)
P, N = (int(x) for x in meta['P'].split()[::2])
models = {l.split()[1]: l.split()[2] for l in open(os.path.join(out, 'meta')) if l.startswith('model ')}
droidgo_bin = meta['droidgo'].split()[0]
MATTR = '+dotprod,+i8mm,+bf16,+fullfp16,+sve,+sve2,+fp16fml'


def plugin(run):
    """Total instructions and the hot blocks [(pc, insns, execs)] of a run."""
    text = open(os.path.join(out, run + '.plugin')).read()
    m = re.search(r'insns: (\d+)', text)
    if not m:
        sys.exit(f'arm64_proxy.py: no instruction count in {run}.plugin')
    blocks = [(int(a, 16), int(i), int(e)) for a, i, e in
              re.findall(r'^blk 0x([0-9a-f]+) (\d+) (\d+)$', text, re.M)]
    return int(m.group(1)), blocks


def maps(run):
    """The executable mappings the llama.cpp driver printed: [(start, end, off, path)]."""
    r = []
    for l in open(os.path.join(out, run + '.err')):
        m = re.match(r'map ([0-9a-f]+)-([0-9a-f]+) ([0-9a-f]+) (\S+)$', l.strip())
        if m:
            r.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16), m.group(4)))
    return r


def grep(run, pat):
    for l in open(os.path.join(out, run + '.err')):
        m = re.search(pat, l)
        if m:
            return m.group(1)
    return '?'


BR = re.compile(r'^(b\.\w+|cbnz|cbz|tbnz|tbz|b|bl|br|blr|ret)(\s|$)')


def disasm(path, vaddr, n):
    """The function holding vaddr and the n instructions from it (branches dropped)."""
    r = subprocess.run(['aarch64-linux-gnu-objdump', '-d', '-C', '--no-show-raw-insn',
                        f'--start-address={vaddr:#x}', f'--stop-address={vaddr + 4 * n:#x}', path],
                       capture_output=True, text=True)
    fn, body = '?', []
    for l in r.stdout.splitlines():
        m = re.match(r'^[0-9a-f]+ <(.*)>:$', l)
        if m:
            fn = re.sub(r'\+0x[0-9a-f]+$', '', m.group(1))
            continue
        m = re.match(r'^\s+[0-9a-f]+:\s+(.*)$', l)
        if m:
            t = re.sub(r'\s+<.*>$', '', m.group(1).split('//')[0].strip())
            if t and not BR.match(t):
                body.append(t)
    return fn, body


mca_cache = {}


def cycles(body, cpu, tag):
    """llvm-mca's cycles per iteration of a block (None when it cannot model it)."""
    if not body:
        return 0.0
    key = (tuple(body), cpu)
    if key in mca_cache:
        return mca_cache[key]
    f = os.path.join(out, 'mca-' + tag + '.s')
    open(f, 'w').write('\n'.join(body) + '\n')
    r = subprocess.run([mca, '-mtriple=aarch64', f'-mcpu={cpu}', f'-mattr={MATTR}', '-iterations=100', f],
                       capture_output=True, text=True)
    m = re.search(r'^Total Cycles:\s+(\d+)', r.stdout, re.M)
    mca_cache[key] = int(m.group(1)) / 100 if m else None
    if m:
        os.remove(f)
    return mca_cache[key]


def hotblocks(case, side, phase):
    """Hot blocks of a run with the base run's executions subtracted, code and cycles."""
    _, blocks = plugin(f'{case}.{side}.{phase}')
    _, base = plugin(f'{case}.{side}.base')
    basex = {(a, i): e for a, i, e in base}
    mp = maps(f'{case}.{side}.{phase}') if side == 'llama' else []
    total = plugin(f'{case}.{side}.{phase}')[0] - plugin(f'{case}.{side}.base')[0]
    ranked = sorted(((a, i, e - basex.get((a, i), 0)) for a, i, e in blocks), key=lambda b: -b[1] * b[2])
    res, done = [], 0
    for k, (a, i, work) in enumerate(ranked):
        if work <= 0 or len(res) >= hot or done >= 0.97 * total:
            break
        done += i * work
        if side == 'droidgo':
            path, va = droidgo_bin, a
        else:
            hit = [m for m in mp if m[0] <= a < m[1]]
            if not hit:
                res.append({'pc': hex(a), 'insns': i, 'execs': work, 'fn': '(outside the ggml/llama libraries)', 'lib': '?', 'cycles': {}})
                continue
            s, _, off, path = hit[0]
            va = a - s + off
        fn, body = disasm(path, va, i)
        cyc = {c: cycles(body, c, f'{case}.{side}.{phase}.{k}.{c}') for c in cpus}
        res.append({'pc': hex(a), 'vaddr': hex(va), 'lib': os.path.basename(path), 'insns': i, 'execs': work,
                    'fn': fn, 'cycles': cyc, 'code': body})
    return res


results = {'meta': meta, 'cases': {}}
hotmd = []
for case in cases:
    cr = {}
    for side in ('droidgo', 'llama'):
        base, _ = plugin(f'{case}.{side}.base')
        dec, _ = plugin(f'{case}.{side}.decode')
        pre, _ = plugin(f'{case}.{side}.prefill')
        sr = {'base_insns': base, 'decode_run_insns': dec, 'prefill_run_insns': pre,
              'decode': (dec - base) / (2 * N), 'prefill': (pre - base) / (2 * P)}
        if side == 'droidgo':
            sr['level'] = grep(f'{case}.droidgo.base', r'kernels (\S+?);')
        else:
            sr['level'] = grep(f'{case}.llama.base', r'cpu variant (\S+)')
        for phase, run_insns in (('decode', dec), ('prefill', pre)):
            hb = hotblocks(case, side, phase)
            work_insns = run_insns - base
            covered = sum(b['insns'] * b['execs'] for b in hb if b['cycles'] and all(v is not None for v in b['cycles'].values()))
            est = {}
            for c in cpus:
                ok = [b for b in hb if b['cycles'].get(c) is not None]
                ins = sum(b['insns'] * b['execs'] for b in ok)
                cyc = sum(b['cycles'][c] * b['execs'] for b in ok)
                est[c] = cyc / ins * sr[phase] if ins else None
            sr[phase + '_cycles'] = est
            sr[phase + '_coverage'] = covered / work_insns if work_insns > 0 else 0
            sr[phase + '_hot'] = hb
            hotmd.append(f'\n### {case} {side} {phase} (work: {work_insns:,} instructions)\n')
            byfn = {}
            for b in hb:
                byfn[b['fn']] = byfn.get(b['fn'], 0) + b['insns'] * b['execs']
            hotmd.append('By function: ' + '; '.join(f'`{f}` {v / work_insns:.1%}' for f, v in sorted(byfn.items(), key=lambda x: -x[1]) if work_insns > 0 and v / work_insns >= 0.005) + '\n')
            hotmd.append('| block | function | insns | executions | share | ' + ' | '.join(f'{c} cyc' for c in cpus) + ' |')
            hotmd.append('|---|---|---|---|---|' + '---|' * len(cpus))
            for b in hb:
                share = b['insns'] * b['execs'] / work_insns if work_insns > 0 else 0
                cc = ' | '.join('—' if b['cycles'].get(c) is None else f"{b['cycles'][c]:.1f}" for c in cpus)
                hotmd.append(f"| {b['lib']}:{b.get('vaddr', b['pc'])} | `{b['fn']}` | {b['insns']} | {b['execs']:,} | {share:.1%} | {cc} |")
        cr[side] = sr
    results['cases'][case] = cr

json.dump(results, open(os.path.join(out, 'results.json'), 'w'), indent=1)
open(os.path.join(out, 'hot.md'), 'w').write('\n'.join(hotmd) + '\n')

print(f"{meta['date']}; {meta['qemu']}; host {meta['host']}")
print(f"droidgo {meta['droidgo'].split(' ', 1)[1]}; llama.cpp 3.22.1 (npm @node-llama-cpp/linux-arm64)")
print(f"prefill: {P}-token prompts; decode: positions 1..{N}; 1 thread")
print()
print('| case | droidgo kernels | llama.cpp variant | phase | droidgo insns/token | llama.cpp insns/token | ratio |')
print('|---|---|---|---|---|---|---|')
for case in cases:
    d, l = results['cases'][case]['droidgo'], results['cases'][case]['llama']
    for ph in ('prefill', 'decode'):
        print(f"| {case} | {d['level']} | {l['level']} | {ph} | {d[ph] / 1e6:,.1f} M | {l[ph] / 1e6:,.1f} M | {d[ph] / l[ph]:.2f} |")
print()
print('| case | phase | core | droidgo Mcycles/token | llama.cpp Mcycles/token | ratio | hot-block coverage (droidgo / llama.cpp) |')
print('|---|---|---|---|---|---|---|')
for case in cases:
    d, l = results['cases'][case]['droidgo'], results['cases'][case]['llama']
    for ph in ('prefill', 'decode'):
        for c in cpus:
            a, b = d[ph + '_cycles'][c], l[ph + '_cycles'][c]
            r = f'{a / b:.2f}' if a and b else '—'
            fa = f'{a / 1e6:,.1f}' if a else '—'
            fb = f'{b / 1e6:,.1f}' if b else '—'
            print(f"| {case} | {ph} | {c} | {fa} | {fb} | {r} | {d[ph + '_coverage']:.0%} / {l[ph + '_coverage']:.0%} |")
