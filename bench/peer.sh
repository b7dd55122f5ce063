#!/usr/bin/env bash
# peer.sh: llama.cpp (sparkpeer, the peer toolkit's driver over node-llama-cpp's
# prebuilt libllama) and droidgo's in-process engine on the same GGUF with the
# same thread count, interleaved (peer, droidgo, peer, droidgo, ...) so that
# both see the same machine load, then droidgo/llama.cpp ratios for pp and tg.
#
# usage: bench/peer.sh MODEL.gguf [-t THREADS] [-p 512] [-n 128] [-r 3] [-k ROUNDS]
#                      [-o OUTDIR] [-P "extra sparkpeer args"] [-D "extra droidgo bench args"]
#   SPARKPEER  path of the sparkpeer binary (required; built by the peer
#              toolkit's scripts/build.sh, usually ~/.cache/spark-peer/bin/sparkpeer)
#   DROIDGO    droidgo binary (default: built from this checkout into OUTDIR)
# Results: OUTDIR/{peer,droidgo}-ROUND.json and a markdown table on stdout.
set -euo pipefail

die() { echo "peer.sh: $*" >&2; exit 2; }

[[ $# -ge 1 ]] || die "usage: bench/peer.sh MODEL.gguf [-t N] [-p 512] [-n 128] [-r 3] [-k ROUNDS] [-o DIR] [-P peer-args] [-D droidgo-args]"
MODEL=$1; shift
[[ -f $MODEL ]] || die "model file $MODEL does not exist"
T=2 P=512 N=128 R=3 K=2 OUT="" PEER_ARGS="" DG_ARGS=""
while getopts "t:p:n:r:k:o:P:D:" opt; do
	case $opt in
	t) T=$OPTARG ;; p) P=$OPTARG ;; n) N=$OPTARG ;; r) R=$OPTARG ;; k) K=$OPTARG ;;
	o) OUT=$OPTARG ;; P) PEER_ARGS=$OPTARG ;; D) DG_ARGS=$OPTARG ;;
	*) die "unknown option" ;;
	esac
done

if [[ -z ${SPARKPEER:-} ]]; then
	die "SPARKPEER is not set: point it at the sparkpeer binary of the llama.cpp peer toolkit
  (build it with: bash /work/shared/peer/scripts/build.sh, then
   export SPARKPEER=\${PEER_OUT:-\$HOME/.cache/spark-peer}/bin/sparkpeer)"
fi
[[ -x $SPARKPEER ]] || die "SPARKPEER=$SPARKPEER is not an executable file (rebuild it with the peer toolkit's scripts/build.sh)"
command -v python3 >/dev/null || die "python3 is needed to read the JSON results"

OUT=${OUT:-$(mktemp -d /tmp/droidgo-peer.XXXXXX)}
mkdir -p "$OUT"
if [[ -z ${DROIDGO:-} ]]; then
	ROOT=$(cd "$(dirname "$0")/.." && pwd)
	DROIDGO=$OUT/droidgo
	(cd "$ROOT" && go build -o "$DROIDGO" ./cmd/droidgo) || die "building droidgo failed"
fi

echo "# $(date -u +%FT%TZ) $(basename "$MODEL"), $T threads, pp$P tg$N, $R reps x $K rounds; results in $OUT" >&2
for ((k = 1; k <= K; k++)); do
	read -r l1 _ < /proc/loadavg
	# shellcheck disable=SC2086
	"$SPARKPEER" bench -m "$MODEL" -p "$P" -n "$N" -r "$R" -t "$T" -o "$OUT/peer-$k.json" $PEER_ARGS >"$OUT/peer-$k.log" 2>&1 ||
		die "sparkpeer failed, see $OUT/peer-$k.log"
	read -r l2 _ < /proc/loadavg
	# shellcheck disable=SC2086
	"$DROIDGO" model bench "$MODEL" -p "$P" -n "$N" -r "$R" -t "$T" --json $DG_ARGS >"$OUT/droidgo-$k.json" 2>"$OUT/droidgo-$k.log" ||
		die "droidgo model bench failed, see $OUT/droidgo-$k.log"
	read -r l3 _ < /proc/loadavg
	echo "$l1 $l2 $l3" >"$OUT/load-$k.txt"
done

python3 - "$OUT" "$K" "$P" "$N" <<'PY'
import json, statistics, sys
out, K, P, N = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def peer(k):
    d = json.load(open(f"{out}/peer-{k}.json"))
    g = lambda key: d[key]["tps_mean"] if key in d else 0.0
    return g(f"pp{P}"), g(f"tg{N}"), d.get("load_s", 0), d.get("peak_rss_kib", 0) / 1024 * 1.048576
def dg(k):
    d = json.load(open(f"{out}/droidgo-{k}.json"))
    return d["pp_tps"], d["tg_tps"], d["load_s"], d["rss_mb"]
print("| round | load avg (before peer / droidgo / after) | llama.cpp pp | droidgo pp | pp ratio | llama.cpp tg | droidgo tg | tg ratio | load s (peer / droidgo) | peak RSS MB (peer / droidgo) |")
print("|---|---|---|---|---|---|---|---|---|---|")
rp, rt = [], []
for k in range(1, K + 1):
    a, b = peer(k), dg(k)
    la = open(f"{out}/load-{k}.txt").read().split()
    pr = b[0] / a[0] if a[0] else float("nan")
    tr = b[1] / a[1] if a[1] else float("nan")
    rp.append(pr); rt.append(tr)
    print(f"| {k} | {' / '.join(la)} | {a[0]:.2f} | {b[0]:.2f} | {pr:.2f} | {a[1]:.2f} | {b[1]:.2f} | {tr:.2f} | {a[2]:.2f} / {b[2]:.2f} | {a[3]:.0f} / {b[3]:.0f} |")
print(f"\ndroidgo/llama.cpp median over {K} rounds: pp {statistics.median(rp):.2f}x, tg {statistics.median(rt):.2f}x")
PY
