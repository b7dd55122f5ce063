#!/usr/bin/env bash
# Regenerates model/spark/testdata/llamacpp (reference logits from llama.cpp).
# Development-time only: needs the peer toolkit (../shared/peer/README.md):
#   mkdir -p /tmp/nlc && cd /tmp/nlc && npm i -E node-llama-cpp@3.22.1 --ignore-scripts
#   PEER_OUT=~/.cache/spark-peer bash <peer>/scripts/build.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
SPARKPEER="${SPARKPEER:-${PEER_OUT:-$HOME/.cache/spark-peer}/bin/sparkpeer}"
[ -x "$SPARKPEER" ] || { echo "sparkpeer not found at $SPARKPEER (build the peer toolkit first)" >&2; exit 1; }
SPARKPEER="$SPARKPEER" go test ./model/spark -run 'TestLlamaCppRegenerate$' -update -count=1 -v
go test ./model/spark -run 'TestLlamaCpp|TestGELUTable|TestWriterMatches' -count=1 -v | grep -E 'max\|diff\||^(ok|FAIL|---)'
