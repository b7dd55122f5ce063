#!/bin/sh
# Static cycle estimates of droidgo's arm64 matrix-matrix micro-kernels with
# llvm-mca (part of the arm64 speed proxy of issue 16; no llama.cpp side yet).
# Cross-compiles model/kernels' tests for linux/arm64, disassembles the inner
# loop of each micro-kernel (from its loop label to the backward branch) with
# binutils' aarch64 objdump and asks llvm-mca for the loop's cycles per
# iteration on the given core models. One iteration is one block: 256 k for
# the K-quants (Q4_K, Q6_K), 32 for Q8_0, 4 for BF16, of a 4-row x 4-token
# tile (q80MMLA8: two blocks of an 8-row x 4-token tile, 2048 MACs); for
# the dotprod level's 4-token kernels the matrix-matrix ones
# replaced (*DOTx4), one block of one row times 4 tokens. It ignores caches, memory bandwidth, clocks and the Go-side packing.
# With LLAMA=1 it also estimates llama.cpp's i8mm GEMM loops of the same
# kind (ggml_gemm_q8_0_4x8_q8_0: 4 rows x 4 tokens per Q8_0 block;
# ggml_gemm_q4_K_8x8_q8_K: 8 rows x 4 tokens per Q4_K block, on weights
# repacked at load) from npm's @node-llama-cpp/linux-arm64 3.22.1 build
# (libggml-cpu-armv8.6_1.so, read only, never run): its innermost loop with
# the most SMMLAs, times the iterations one block needs, plus the rest of
# the loop enclosing it when that loop is the block loop.
# Usage (from the module root): [LLAMA=1] bench/arm64-mca.sh [cpu ...]
# (default: neoverse-v2 cortex-x925 cortex-x4 cortex-a76). Installs llvm-19
# and binutils-aarch64-linux-gnu with apt-get when they are missing; needs python3.
set -eu
cpus=${*:-neoverse-v2 cortex-x925 cortex-x4 cortex-a76}
mca=/usr/lib/llvm-19/bin/llvm-mca
if [ ! -x "$mca" ] || ! command -v aarch64-linux-gnu-objdump >/dev/null; then
	apt-get install -y llvm-19 binutils-aarch64-linux-gnu >/dev/null
fi
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/arm64-mca.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go test -c -o "$tmp/k.test" ./model/kernels
aarch64-linux-gnu-objdump -d --no-show-raw-insn "$tmp/k.test" >"$tmp/dis"
printf '%-10s %-12s %6s %10s %8s\n' kernel cpu insns cycles/blk MAC/cyc
# kernel:MACs per loop iteration
for k in q80MMLA:512 q80MMLA8:2048 q4kMMLA:4096 q6kMMLA:4096 bf16MMLA:64 q80DOTmm:512 q4kDOTmm:4096 q6kDOTmm:4096 \
	q80DOTx4:128 q4kDOTx4:1024 q6kDOTx4:1024 q80DOT:32 q4kDOT:256 q6kDOT:256 q5kDOT:256 \
	bf16NEON:16:first-back bf16DOT:64:first-back bf16NEONx4:64 bf16DOTx4:64:first-back; do
	name=${k%%:*} macs=${k#*:} loop=first-bne
	case $macs in *:*) loop=${macs#*:} macs=${macs%%:*} ;; esac
	# The block loop: from the target of the function's first b.ne to it
	# (first-back: its first backward branch, which ends the main loop of
	# the BF16 kernels written that way: 16 or 64 k of one row, or for
	# bf16DOTx4 16 k of one row times 4 tokens).
	python3 "$here/mca_loops.py" "$tmp/dis" "github.com/droidgo/droidgo/model/kernels.$name.abi0" $loop "$tmp/$name.s"
	n=$(wc -l <"$tmp/$name.s")
	for c in $cpus; do
		cyc=$("$mca" -mtriple=aarch64 -mcpu="$c" -mattr=+dotprod,+i8mm,+bf16 -iterations=100 "$tmp/$name.s" 2>/dev/null | awk '/^Total Cycles:/ {print $3/100}')
		printf '%-10s %-12s %6d %10s %8s\n' "$name" "$c" "$n" "$cyc" "$(awk -v m=$macs -v c="$cyc" 'BEGIN { if (c > 0) printf "%.1f", m / c }')"
	done
done
[ "${LLAMA:-}" = 1 ] || exit 0
command -v npm >/dev/null || apt-get install -y npm >/dev/null
(cd "$tmp" && npm pack --silent @node-llama-cpp/linux-arm64@3.22.1 >/dev/null && tar xzf node-llama-cpp-linux-arm64-3.22.1.tgz)
aarch64-linux-gnu-objdump -d --no-show-raw-insn "$tmp/package/bins/linux-arm64/libggml-cpu-armv8.6_1.so" >"$tmp/ggml.dis"
echo
printf '%-26s %-12s %10s %8s\n' llama.cpp cpu cycles/blk MAC/cyc
# function:MACs per block of its tile
for k in ggml_gemm_q8_0_4x8_q8_0:512 ggml_gemm_q4_K_8x8_q8_K:8192; do
	fn=${k%%:*} block=${k##*:}
	set -- $(python3 "$here/mca_loops.py" "$tmp/ggml.dis" "$fn" hot "$tmp/in.s" "$tmp/out.s")
	inner=$((32 * $1 + 16 * $2)) # MACs of one inner iteration
	for c in $cpus; do
		ci=$("$mca" -mtriple=aarch64 -mcpu="$c" -mattr=+dotprod,+i8mm,+bf16 -iterations=100 "$tmp/in.s" 2>/dev/null | awk '/^Total Cycles:/ {print $3/100}')
		co=0
		if [ "$inner" -lt "$block" ]; then
			co=$("$mca" -mtriple=aarch64 -mcpu="$c" -mattr=+dotprod,+i8mm,+bf16 -iterations=100 "$tmp/out.s" 2>/dev/null | awk '/^Total Cycles:/ {print $3/100}')
		fi
		awk -v f="$fn" -v c="$c" -v ci="$ci" -v co="$co" -v b="$block" -v i="$inner" 'BEGIN { cyc = ci * b / i + co; printf "%-26s %-12s %10.2f %8.1f\n", f, c, cyc, b / cyc }'
	done
done