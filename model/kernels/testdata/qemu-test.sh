#!/bin/sh
# Runs the arm64 kernel tests under qemu-user on an x86 host, once per arm64
# level (-cpu max: i8mm, cortex-a76: dotprod, cortex-a53: neon), checks the
# WORD-encoded instructions with objdump when binutils-aarch64-linux-gnu is
# installed and the generated assembly against its generators (asmgen/).
# Usage (from the module root): model/kernels/testdata/qemu-test.sh
set -eu
dir=$(cd "$(dirname "$0")/.." && pwd)
command -v qemu-aarch64-static >/dev/null || { echo "qemu-aarch64-static missing (apt-get install qemu-user-static)" >&2; exit 1; }
bin=$(mktemp /tmp/kernels-arm64.XXXXXX)
gen=$(mktemp -d /tmp/kernels-gen.XXXXXX)
trap 'rm -rf "$bin" "$gen"' EXIT
(cd "$dir" && CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go test -c -o "$bin" .)
run='^Test(MatVec|MatMul|Gemm|DotAxpy|Levels|ShortBuffers|ISAMatches|EnvOverride|BF16Detect|Quantize|BatchInvariant|GELU|RoundF16|EncodeF16|Repack)'
export DROIDGO_TEST_ONE_LEVEL=1
DROIDGO_WANT_ISA=i8mm DROIDGO_WANT_BF16=1 qemu-aarch64-static -cpu max,sve-default-vector-length=16 "$bin" -test.short -test.run "$run"
DROIDGO_WANT_ISA=dotprod DROIDGO_WANT_BF16=0 qemu-aarch64-static -cpu cortex-a76 "$bin" -test.short -test.run "$run"
DROIDGO_WANT_ISA=neon DROIDGO_WANT_BF16=0 qemu-aarch64-static -cpu cortex-a53 "$bin" -test.short -test.run "$run"
if command -v aarch64-linux-gnu-objdump >/dev/null && command -v python3 >/dev/null; then
	python3 "$dir/asmgen/check_words.py" "$dir"/*_arm64.s
	for g in "$dir"/asmgen/gen_*.py; do python3 "$g" "$gen"; done
	for f in "$gen"/*.s; do cmp "$f" "$dir/$(basename "$f")"; done
fi
