#!/usr/bin/env bash
# replay.sh: the cost of a replayed step (droidgo replay --json's read_ms,
# match_ms and act_ms) for a shipped recording, on the simulator in process
# and on the fake adbd (droidgo sim serve) behind a private real adb server,
# the two interleaved so both see the same machine load.
#
# usage: bench/replay.sh [RECORDING] [-n RUNS]    (default: wifi, 10 runs)
#   DROIDGO  droidgo binary (default: built from this checkout)
# Needs Debian's adb. Prints, per step and phone, the range over the runs.
set -euo pipefail

REC=wifi N=10
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) N=$2; shift 2 ;;
    *) REC=$1; shift ;;
  esac
done
command -v adb >/dev/null || { echo "replay.sh: adb is not installed (apt-get install adb)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
DROIDGO=${DROIDGO:-}
if [[ -z $DROIDGO ]]; then
  DROIDGO=$OUT/droidgo
  go build -o "$DROIDGO" ./cmd/droidgo
fi
SCENARIO=$("$DROIDGO" replay "$REC" --json --speed 0 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["device"].removeprefix("sim:"))')
PORT=$((20000 + RANDOM % 10000))
export ANDROID_ADB_SERVER_PORT=$PORT DROIDGO_CONFIG=/dev/null
adb -P "$PORT" start-server >/dev/null 2>&1
trap 'adb -P "$PORT" kill-server >/dev/null 2>&1; rm -rf "$OUT"' EXIT
for i in $(seq "$N"); do
  "$DROIDGO" replay "$REC" --sim "$SCENARIO" --json > "$OUT/sim-$i.jsonl"
  DP=$((PORT + i))
  "$DROIDGO" sim serve --scenario "$SCENARIO" --port "$DP" > /dev/null 2>&1 & SP=$!
  for _ in $(seq 50); do adb -P "$PORT" connect "127.0.0.1:$DP" 2>/dev/null | grep -q '^connected' && break; sleep 0.1; done
  "$DROIDGO" replay "$REC" --device "127.0.0.1:$DP" --json > "$OUT/adb-$i.jsonl"
  adb -P "$PORT" disconnect "127.0.0.1:$DP" >/dev/null
  kill "$SP"; wait "$SP" 2>/dev/null || true
done
python3 - "$OUT" <<'PY'
import glob, json, sys
d = sys.argv[1]
for kind, name in (("sim", "simulator (in process)"), ("adb", "fake adbd behind the adb server")):
    steps, totals = {}, []
    for f in sorted(glob.glob(f"{d}/{kind}-*.jsonl")):
        total = 0.0
        for line in open(f):
            e = json.loads(line)
            if e.get("type") == "action" and "replay" in e:
                r = e["replay"]
                steps.setdefault(r["step"], []).append((r["read_ms"], r["match_ms"], r["act_ms"]))
                total += r["read_ms"] + r["match_ms"] + r["act_ms"]
            if e.get("type") == "replay_result" and e["replayed"] != e["total"]:
                sys.exit(f"{f}: the replay stopped: {e}")
        totals.append(total)
    print(f"{name}:")
    for st in sorted(steps):
        v = steps[st]
        rng = lambda k: f"{min(x[k] for x in v):.1f}-{max(x[k] for x in v):.1f}"
        print(f"  step {st}: read {rng(0)} ms, match {rng(1)} ms, act {rng(2)} ms (n={len(v)})")
    print(f"  whole replay: {min(totals):.0f}-{max(totals):.0f} ms")
PY
