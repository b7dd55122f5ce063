#!/bin/sh
# Static cycle estimates of droidgo's arm64 matrix-matrix micro-kernels with
# llvm-mca (part of the arm64 speed proxy of issue 16; no llama.cpp side yet).
# Cross-compiles model/kernels' tests for linux/arm64, disassembles the inner
# loop of each micro-kernel (from its loop label to the backward branch) with
# binutils' aarch64 objdump and asks llvm-mca for the loop's cycles per
# iteration on the given core models. One iteration is one block: 256 k for
# the K-quants (Q4_K, Q6_K), 32 for Q8_0, 4 for BF16, of a 4-row x 4-token
# tile; for the dotprod level's 4-token kernels the matrix-matrix ones
# replaced (*DOTx4), one block of one row times 4 tokens. It ignores caches, memory bandwidth, clocks and the Go-side packing.
# Usage (from the module root): bench/arm64-mca.sh [cpu ...]
# (default: neoverse-v2 cortex-x925 cortex-x4 cortex-a76). Installs llvm-19
# and binutils-aarch64-linux-gnu with apt-get when they are missing; needs python3.
set -eu
cpus=${*:-neoverse-v2 cortex-x925 cortex-x4 cortex-a76}
mca=/usr/lib/llvm-19/bin/llvm-mca
if [ ! -x "$mca" ] || ! command -v aarch64-linux-gnu-objdump >/dev/null; then
	apt-get install -y llvm-19 binutils-aarch64-linux-gnu >/dev/null
fi
tmp=$(mktemp -d /tmp/arm64-mca.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go test -c -o "$tmp/k.test" ./model/kernels
aarch64-linux-gnu-objdump -d --no-show-raw-insn "$tmp/k.test" >"$tmp/dis"
printf '%-10s %-12s %6s %10s %8s\n' kernel cpu insns cycles/blk MAC/cyc
# kernel:MACs per loop iteration
for k in q80MMLA:512 q4kMMLA:4096 q6kMMLA:4096 bf16MMLA:64 q80DOTmm:512 q4kDOTmm:4096 q6kDOTmm:4096 \
	q80DOTx4:128 q4kDOTx4:1024 q6kDOTx4:1024; do
	name=${k%%:*} macs=${k##*:}
	# The block loop: from the target of the function's first b.ne to it.
	python3 - "$tmp/dis" "$name" >"$tmp/$name.s" <<'PY'
import re, sys
dis, name = sys.argv[1], sys.argv[2]
lines, inside = [], False
for l in open(dis):
    if re.match(r'^[0-9a-f]+ <.*\.' + name + r'\.abi0>:', l):
        inside = True
        continue
    if inside:
        m = re.match(r'^\s+([0-9a-f]+):\s+(.*)$', l)
        if not m:
            if lines:
                break
            continue
        lines.append((int(m.group(1), 16), m.group(2).split('//')[0].strip()))
bne = [i for i, (_, t) in enumerate(lines) if t.startswith('b.ne')][0]
target = int(lines[bne][1].split()[1], 16)
start = [i for i, (a, _) in enumerate(lines) if a == target][0]
for _, t in lines[start:bne]:
    print(re.sub(r'\s+<.*>$', '', t))
PY
	n=$(wc -l <"$tmp/$name.s")
	for c in $cpus; do
		cyc=$("$mca" -mtriple=aarch64 -mcpu="$c" -mattr=+dotprod,+i8mm,+bf16 -iterations=100 "$tmp/$name.s" 2>/dev/null | awk '/^Total Cycles:/ {print $3/100}')
		printf '%-10s %-12s %6d %10s %8s\n' "$name" "$c" "$n" "$cyc" "$(awk -v m=$macs -v c="$cyc" 'BEGIN { if (c > 0) printf "%.1f", m / c }')"
	done
done
