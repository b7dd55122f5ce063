#!/usr/bin/env bash
# arm64-proxy.sh: the arm64 speed proxy of issue 16. Counts the instructions
# droidgo's linux/arm64 build and llama.cpp's arm64 build (npm's
# @node-llama-cpp/linux-arm64 3.22.1, driven by bench/arm64-llama.c) execute
# per token for prefill and decode of the same GGUF under qemu-aarch64 (TCG
# plugins: qemu's libbb for the total, and the project's bench/arm64-blocks.c
# for the blocks, both built against Debian's qemu source package), then
# estimates the cycles of the hottest translation blocks of each with
# llvm-mca's models of real cores.
#
# usage: bench/arm64-proxy.sh [-m MODEL.gguf]... [-c CPU] [-p 64] [-n 4]
#                             [-s SRC] [-o OUTDIR] [-M "mca cpus"] [-H 20]
#   -m  model files (repeatable; default: full-size random 1.7B Q4_K_M and
#       Q8_0 files made with `droidgo model make-random` into the cache)
#   -c  qemu -cpu (default max,sve-default-vector-length=16: dotprod, i8mm,
#       bf16, SVE2 at 128 bits as on phone cores)
#   -p  prompt tokens of the prefill case (default 64, droidgo's chunk)
#   -n  decode tokens counted (default 4)
#   -s  droidgo checkout to build linux/arm64 from (default: this one; it
#       is only read)
#   -g  build that commit of -s (git archive into OUTDIR) instead of its
#       work tree, e.g. -g HEAD to leave uncommitted changes out
#   -M  llvm-mca cores (default "cortex-x925 cortex-x4 neoverse-v2")
#   -H  at most this many hot blocks per run go to llvm-mca (default 60;
#       fewer when they already cover 97% of the run's work)
# environment:
#   DROIDGO        a linux/arm64 droidgo binary instead of building one
#   LLAMA_VARIANT  e.g. armv8.6_1: offer ggml only that CPU variant
#                  (default: all, ggml's own scoring picks one)
#   PROXY_CACHE    downloads and builds (default ~/.cache/droidgo-arm64-proxy)
#   QEMU_SRC       an unpacked qemu source tree matching the installed
#                  qemu-user, instead of `apt-get source qemu`
#   LLAMA_RUNS     an earlier OUTDIR whose llama.cpp runs are reused when
#                  they were made with the same -cpu, -p, -n, model and
#                  LLAMA_VARIANT (llama.cpp does not change between runs;
#                  saves half the time when only droidgo changed)
#
# How a count per token is made (each run is one qemu process, counted
# whole by libbb, 1 thread each side, GOMAXPROCS=1):
#   droidgo: `model bench -t 1 -r 1` does one warm-up and one timed
#   repetition, so each measured evaluation runs twice. Runs: base = `-p 0
#   -n 1`, decode = `-p 0 -n 1+N`, prefill = `-p P -n 1`.
#   llama.cpp: the driver with REPS=2 does the same work (P-token prompts
#   from an empty cache, logits of the last token; single-token decodes
#   from an empty cache, logits every token).
#   decode insns/token  = (decode - base) / (2 N)  (positions 1..N)
#   prefill insns/token = (prefill - base) / (2 P) (the whole prompt
#   evaluation, fixed per-call costs such as weight packing included)
# so loading, llama.cpp's repacking at load, droidgo's first-token step and
# background repack, and process start-up cancel.
#
# Cycle estimates: arm64-blocks lists the translation blocks that executed
# the most instructions in each run; each block's instructions
# (disassembled from the binary or the mapped library at the address qemu
# ran) go to llvm-mca per core, and cycles/token = (sum of block cycles x
# executions) / (sum of block insns x executions) x insns/token, i.e. the
# hot blocks' cycles per instruction applied to the whole count. The
# coverage column says which fraction of the measured work's instructions
# those blocks are. Each block's executions in the base run (loading,
# repacking, the base's own tokens) are subtracted first.
# What the proxy ignores: caches, memory bandwidth and latency, clocks,
# branch prediction across blocks, SVE vector lengths above 128 bits,
# and the cost of the instructions outside the hot blocks beyond their
# count.
set -euo pipefail

die() { echo "arm64-proxy.sh: $*" >&2; exit 2; }  # usage errors
fail() { echo "arm64-proxy.sh: $*" >&2; exit 1; } # a step failed

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODELS=() CPU="max,sve-default-vector-length=16" P=64 N=4 SRC=$ROOT OUT="" REV=""
MCA_CPUS="cortex-x925 cortex-x4 neoverse-v2" HOT=60
while getopts "m:c:p:n:s:g:o:M:H:" opt; do
	case $opt in
	m) MODELS+=("$OPTARG") ;; c) CPU=$OPTARG ;; p) P=$OPTARG ;; n) N=$OPTARG ;;
	s) SRC=$OPTARG ;; g) REV=$OPTARG ;; o) OUT=$OPTARG ;; M) MCA_CPUS=$OPTARG ;; H) HOT=$OPTARG ;;
	*) die "usage: bench/arm64-proxy.sh [-m MODEL.gguf]... [-c CPU] [-p 64] [-n 4] [-s SRC] [-g COMMIT] [-o OUTDIR] [-M cpus] [-H 60]" ;;
	esac
done
[[ $P =~ ^[0-9]+$ && $P -ge 1 && $P -le 512 ]] || die "-p must be 1 to 512"
[[ $N =~ ^[0-9]+$ && $N -ge 1 && $N -le 256 ]] || die "-n must be 1 to 256"
[[ $HOT =~ ^[0-9]+$ && $HOT -ge 1 && $HOT -le 300 ]] || die "-H must be 1 to 300"
for m in "${MODELS[@]}"; do [[ -f $m ]] || die "model file $m does not exist"; done
command -v python3 >/dev/null || fail "python3 is needed"

CACHE=${PROXY_CACHE:-$HOME/.cache/droidgo-arm64-proxy}
mkdir -p "$CACHE"
OUT=${OUT:-$(mktemp -d /tmp/arm64-proxy.XXXXXX)}
mkdir -p "$OUT"
log() { echo "# $*" >&2; }

# 1. Debian packages (installed only when missing).
need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for pkg in qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross libstdc++6-arm64-cross \
	binutils-aarch64-linux-gnu libglib2.0-dev pkg-config dpkg-dev llvm-19; do
	have "$pkg" || need+=("$pkg")
done
# npm and git may come from elsewhere (e.g. NodeSource's nodejs carries npm).
for cmd in npm git; do command -v $cmd >/dev/null || need+=("$cmd"); done
if ((${#need[@]})); then
	log "apt-get install ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >"$OUT/apt.log" 2>&1 ||
		fail "apt-get install ${need[*]} failed, see $OUT/apt.log"
fi
MCA=/usr/lib/llvm-19/bin/llvm-mca
QEMU=$(command -v qemu-aarch64) || fail "qemu-aarch64 (Debian's dynamic qemu-user) is missing"

# 2. TCG plugins, built from the qemu source package of the installed qemu-user.
QVER=$(dpkg-query -W -f='${Version}' qemu-user)
QSRCVER=$(dpkg-query -W -f='${source:Version}' qemu-user) # without a binNMU's +bN
PLUG=$CACHE/plugins-${QVER#*:}
if [[ ! -f $PLUG/libbb.so || ! -f $PLUG/arm64-blocks.so || $ROOT/bench/arm64-blocks.c -nt $PLUG/arm64-blocks.so ]]; then
	if [[ -z ${QEMU_SRC:-} ]]; then
		QEMU_SRC=$(ls -d "$CACHE"/qemu-src-"${QSRCVER#*:}"/qemu-*/ 2>/dev/null | head -1 || true)
		if [[ -z $QEMU_SRC ]]; then
			if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
				# Debian's own archive as configured for binaries, as deb-src.
				[[ -f /etc/apt/sources.list.d/debian.sources ]] || fail "no deb-src line for apt-get source qemu: add one, or set QEMU_SRC"
				sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >/etc/apt/sources.list.d/debian-src.sources
				apt-get update >"$OUT/apt-update.log" 2>&1 || fail "apt-get update failed, see $OUT/apt-update.log"
			fi
			mkdir -p "$CACHE/qemu-src-${QSRCVER#*:}"
			log "apt-get source qemu=$QSRCVER"
			(cd "$CACHE/qemu-src-${QSRCVER#*:}" && apt-get source -y "qemu=$QSRCVER" >"$OUT/apt-source.log" 2>&1) ||
				fail "apt-get source qemu=$QSRCVER failed, see $OUT/apt-source.log"
			QEMU_SRC=$(ls -d "$CACHE"/qemu-src-"${QSRCVER#*:}"/qemu-*/ | head -1)
		fi
	fi
	[[ -f $QEMU_SRC/tests/plugin/bb.c && -f $QEMU_SRC/include/qemu/qemu-plugin.h ]] || fail "QEMU_SRC=$QEMU_SRC is not a qemu source tree"
	mkdir -p "$PLUG"
	# shellcheck disable=SC2046
	gcc -shared -fPIC -O2 -o "$PLUG/libbb.so" "$QEMU_SRC/tests/plugin/bb.c" -I "$QEMU_SRC/include/qemu" \
		$(pkg-config --cflags --libs glib-2.0) || fail "building qemu's bb plugin failed"
	gcc -shared -fPIC -O2 -Wall -o "$PLUG/arm64-blocks.so" "$ROOT/bench/arm64-blocks.c" -I "$QEMU_SRC/include/qemu" -lpthread ||
		fail "building bench/arm64-blocks.c failed"
fi

# 3. llama.cpp's arm64 build and the headers of the same release (node-llama-cpp
#    ships the llama.cpp source as a git bundle; only include/ is taken).
NLC=$CACHE/nlc-3.22.1
BINS=$NLC/arm64/package/bins/linux-arm64
if [[ ! -f $BINS/libllama.v0.5.0.so || ! -f $NLC/hdr/include/llama.h ]]; then
	log "npm pack @node-llama-cpp/linux-arm64@3.22.1 node-llama-cpp@3.22.1"
	rm -rf "$NLC" && mkdir -p "$NLC/arm64" "$NLC/src" "$NLC/hdr"
	(cd "$NLC" && npm pack --silent @node-llama-cpp/linux-arm64@3.22.1 node-llama-cpp@3.22.1 >"$OUT/npm.log" 2>&1) ||
		fail "npm pack failed, see $OUT/npm.log"
	tar xzf "$NLC/node-llama-cpp-linux-arm64-3.22.1.tgz" -C "$NLC/arm64"
	tar xzf "$NLC/node-llama-cpp-3.22.1.tgz" -C "$NLC/src" package/llama/gitRelease.bundle
	git clone -q --bare "$NLC/src/package/llama/gitRelease.bundle" "$NLC/bundle.git"
	git --git-dir="$NLC/bundle.git" archive HEAD include ggml/include | tar -x -C "$NLC/hdr"
	rm -rf "$NLC/bundle.git" "$NLC/src" "$NLC"/*.tgz
fi
LLBIN=$CACHE/arm64-llama
if [[ ! -x $LLBIN || $ROOT/bench/arm64-llama.c -nt $LLBIN ]]; then
	aarch64-linux-gnu-gcc -O2 -std=gnu11 -Wall -Wextra -I "$NLC/hdr/include" -I "$NLC/hdr/ggml/include" \
		"$ROOT/bench/arm64-llama.c" -o "$LLBIN" -L "$BINS" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
		-Wl,-rpath,"$BINS" -Wl,-rpath-link,"$BINS" -Wl,-rpath-link,/usr/aarch64-linux-gnu/lib || fail "building bench/arm64-llama.c failed"
fi
LLBINS=$BINS
if [[ -n ${LLAMA_VARIANT:-} ]]; then
	[[ -f $BINS/libggml-cpu-$LLAMA_VARIANT.so ]] || die "no llama.cpp CPU variant $LLAMA_VARIANT (have: $(cd "$BINS" && ls libggml-cpu-*.so | sed 's/libggml-cpu-//; s/\.so//' | tr '\n' ' '))"
	LLBINS=$OUT/bins-$LLAMA_VARIANT
	mkdir -p "$LLBINS"
	ln -sf "$BINS/libggml-cpu-$LLAMA_VARIANT.so" "$LLBINS/"
fi

# 4. droidgo for linux/arm64, and models.
SRCDESC="$SRC at $(git -C "$SRC" log -1 --format='%h' 2>/dev/null || echo '?')"
if [[ -n $(git -C "$SRC" status --porcelain 2>/dev/null || true) ]]; then SRCDESC+=" + uncommitted changes"; fi
if [[ -z ${DROIDGO:-} ]]; then
	DROIDGO=$OUT/droidgo-arm64
	BUILD=$SRC
	if [[ -n $REV ]]; then
		BUILD=$OUT/src
		rm -rf "$BUILD" && mkdir -p "$BUILD"
		git -C "$SRC" archive "$REV" | tar -x -C "$BUILD" || fail "git archive $REV of $SRC failed"
		SRCDESC="$SRC at $(git -C "$SRC" rev-parse --short "$REV")"
	fi
	log "building droidgo (linux/arm64) from $SRCDESC"
	(cd "$BUILD" && CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -o "$DROIDGO" ./cmd/droidgo) || fail "building droidgo from $SRCDESC failed"
else
	SRCDESC="the binary $DROIDGO"
fi
if ((${#MODELS[@]} == 0)); then
	for t in q4_k_m q8_0; do
		f=$CACHE/random-1.7b-$t.gguf
		if [[ ! -f $f ]]; then
			log "droidgo model make-random --arch-size 1.7b --type $t"
			(cd "$ROOT" && go run ./cmd/droidgo model make-random --arch-size 1.7b --type "$t" --out "$f.tmp") && mv "$f.tmp" "$f" ||
				fail "making $f failed"
		fi
		MODELS+=("$f")
	done
fi

# 5. The runs: 3 per side per model, each one qemu process.
qrun() { # name, then the guest command line
	local name=$1
	shift
	local t0=$SECONDS
	GOMAXPROCS=1 nice -n 10 "$QEMU" -L /usr/aarch64-linux-gnu -cpu "$CPU" \
		-plugin "$PLUG/libbb.so,inline=on" -plugin "$PLUG/arm64-blocks.so,top=300" \
		-d plugin -D "$OUT/$name.plugin" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" ||
		fail "run $name failed, see $OUT/$name.err"
	log "$name: $(grep -o 'insns: [0-9]*' "$OUT/$name.plugin") in $((SECONDS - t0)) s"
}
echo "date $(date -u +%FT%TZ)" >"$OUT/meta"
echo "host $(uname -srm), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" >>"$OUT/meta"
echo "qemu $("$QEMU" --version | head -1) ($QVER), -cpu $CPU" >>"$OUT/meta"
echo "droidgo $DROIDGO ($SRCDESC)" >>"$OUT/meta"
echo "llama $LLBIN $BINS" >>"$OUT/meta"
echo "P $P N $N" >>"$OUT/meta"
cases=()
for m in "${MODELS[@]}"; do
	c=$(basename "$m" .gguf)
	cases+=("$c")
	echo "model $c $m" >>"$OUT/meta"
	log "$c: droidgo"
	dg=("$DROIDGO" model bench "$m" -t 1 -r 1)
	qrun "$c.droidgo.base" "${dg[@]}" -p 0 -n 1
	qrun "$c.droidgo.decode" "${dg[@]}" -p 0 -n $((N + 1))
	qrun "$c.droidgo.prefill" "${dg[@]}" -p "$P" -n 1
	key="$(realpath "$m") $CPU $P $N ${LLAMA_VARIANT:-}"
	if [[ -n ${LLAMA_RUNS:-} && -f $LLAMA_RUNS/$c.llama.key && $(cat "$LLAMA_RUNS/$c.llama.key") == "$key" ]]; then
		log "$c: llama.cpp runs reused from $LLAMA_RUNS"
		cp "$LLAMA_RUNS/$c".llama.* "$OUT/"
		continue
	fi
	log "$c: llama.cpp"
	qrun "$c.llama.base" "$LLBIN" "$LLBINS" "$m" 0 1 2 1
	qrun "$c.llama.decode" "$LLBIN" "$LLBINS" "$m" 0 $((N + 1)) 2 1
	qrun "$c.llama.prefill" "$LLBIN" "$LLBINS" "$m" "$P" 1 2 1
	echo "$key" >"$OUT/$c.llama.key"
done

# 6. Counts, hot blocks, llvm-mca, the table.
python3 "$ROOT/bench/arm64_proxy.py" "$OUT" "$MCA" "$HOT" $MCA_CPUS -- "${cases[@]}"
echo "results and logs: $OUT" >&2
