#!/usr/bin/env bash
# batched.sh: many sequences decoded together, droidgo's engine (model bench
# --parallel) against llama.cpp (the peer toolkit's `sparkpeer batched`, as
# llama-batched-bench) on the same GGUF with the same threads, interleaved
# (droidgo, peer, droidgo, peer, ...), each run under flock on LOCK so that no
# other measurement overlaps it. For each sequence count N: N prompts of -p
# tokens (one after the other), then -n passes decoding one token of every
# sequence.
#
# usage: bench/batched.sh MODEL.gguf [-t THREADS] [-p 128] [-n 128] [-c 1,2,4,8,16,32]
#                         [-k ROUNDS] [-o OUTDIR] [-P "extra sparkpeer args"]
#   SPARKPEER  the sparkpeer binary (required; the peer toolkit's scripts/build.sh)
#   DROIDGO    droidgo binary (default: built from this checkout into OUTDIR)
#   LOCK       lock file wrapped around every run (default /work/coord/cpu.lock
#              when it exists, else none)
# Results: OUTDIR/{droidgo,peer}-ROUND.json and a markdown table on stdout:
# per count the ranges over the rounds and the droidgo/llama.cpp ratios.
set -euo pipefail

die() { echo "batched.sh: $*" >&2; exit 2; }

[[ $# -ge 1 ]] || die "usage: bench/batched.sh MODEL.gguf [-t N] [-p 128] [-n 128] [-c 1,2,4,8,16,32] [-k ROUNDS] [-o DIR] [-P peer-args]"
MODEL=$1; shift
[[ -f $MODEL ]] || die "model file $MODEL does not exist"
T=2 P=128 N=128 C=1,2,4,8,16,32 K=2 OUT="" PEER_ARGS="--no-mmap"
while getopts "t:p:n:c:k:o:P:" opt; do
	case $opt in
	t) T=$OPTARG ;; p) P=$OPTARG ;; n) N=$OPTARG ;; c) C=$OPTARG ;; k) K=$OPTARG ;;
	o) OUT=$OPTARG ;; P) PEER_ARGS=$OPTARG ;;
	*) die "unknown option" ;;
	esac
done
[[ -n ${SPARKPEER:-} && -x ${SPARKPEER:-} ]] || die "SPARKPEER must name the sparkpeer binary (bash /work/shared/peer/scripts/build.sh, then export SPARKPEER=\${PEER_OUT:-\$HOME/.cache/spark-peer}/bin/sparkpeer)"
command -v python3 >/dev/null || die "python3 is needed to read the JSON results"
LOCK=${LOCK-}
if [[ -z $LOCK && -e /work/coord/cpu.lock ]]; then LOCK=/work/coord/cpu.lock; fi
locked() { if [[ -n $LOCK ]]; then flock "$LOCK" "$@"; else "$@"; fi; }

OUT=${OUT:-$(mktemp -d /tmp/droidgo-batched.XXXXXX)}
mkdir -p "$OUT"
if [[ -z ${DROIDGO:-} ]]; then
	ROOT=$(cd "$(dirname "$0")/.." && pwd)
	DROIDGO=$OUT/droidgo
	(cd "$ROOT" && go build -o "$DROIDGO" ./cmd/droidgo) || die "building droidgo failed"
fi

echo "# $(date -u +%FT%TZ) $(basename "$MODEL"), $T threads, P=$P T=$N, counts $C, $K rounds; results in $OUT" >&2
for ((k = 1; k <= K; k++)); do
	echo "droidgo $k start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/log"
	locked "$DROIDGO" model bench "$MODEL" --parallel "$C" -p "$P" -n "$N" -r 1 -t "$T" --json >"$OUT/droidgo-$k.json" 2>"$OUT/droidgo-$k.err" ||
		die "droidgo model bench failed, see $OUT/droidgo-$k.err"
	echo "droidgo $k end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/log"
	# shellcheck disable=SC2086
	locked "$SPARKPEER" batched -m "$MODEL" -p "$P" -n "$N" --npl "$C" -t "$T" -r 1 -o "$OUT/peer-$k.json" $PEER_ARGS >"$OUT/peer-$k.err" 2>&1 ||
		die "sparkpeer failed, see $OUT/peer-$k.err"
	echo "peer $k end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/log"
done

python3 - "$OUT" "$K" <<'PY'
import json, sys
out, K = sys.argv[1], int(sys.argv[2])
dg = [{r["sequences"]: r for r in json.load(open(f"{out}/droidgo-{k}.json"))["parallel"]} for k in range(1, K + 1)]
pe = [{r["npl"]: r for r in json.load(open(f"{out}/peer-{k}.json"))["results"]} for k in range(1, K + 1)]
def rng(xs, f="{:.1f}"):
    lo, hi = min(xs), max(xs)
    return f.format(lo) if f.format(lo) == f.format(hi) else f"{f.format(lo)}-{f.format(hi)}"
print("| sequences | droidgo tg tok/s | per sequence | x its 1 | llama.cpp tg tok/s | x its 1 | tg droidgo/llama.cpp | droidgo pp tok/s | llama.cpp pp tok/s | droidgo RSS MB |")
print("|---|---|---|---|---|---|---|---|---|---|")
for n in sorted(dg[0]):
    d = [x[n] for x in dg]; p = [x[n] for x in pe if n in x]
    d1 = [x[min(x)]["tg_tps"] for x in dg]; p1 = [x[min(x)]["tg_tps"] for x in pe]
    ratio = [d[k]["tg_tps"] / p[k]["tg_tps"] for k in range(min(len(d), len(p))) if p[k]["tg_tps"]]
    print(f"| {n} | {rng([r['tg_tps'] for r in d])} | {rng([r['tg_tps_per_sequence'] for r in d], '{:.2f}')} | "
          f"{rng([d[k]['tg_tps'] / d1[k] for k in range(len(d))], '{:.2f}')} | {rng([r['tg_tps'] for r in p]) if p else '-'} | "
          f"{rng([p[k]['tg_tps'] / p1[k] for k in range(len(p))], '{:.2f}') if p else '-'} | {rng(ratio, '{:.2f}') if ratio else '-'} | "
          f"{rng([r['pp_tps'] for r in d])} | {rng([r['pp_tps'] for r in p]) if p else '-'} | {rng([r['rss_mb'] for r in d], '{:.0f}')} |")
PY
