#!/usr/bin/env bash
# One H200 call for v4's two-loop work list and per-call build (commit cf845e8): the published
# plain table of the GPU stages from v3 (bench --publish), the old/new side by side
# (lever_probe), then correctness: the whole suite beside v4's stream-K verify steps.
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/v4_final.sh
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/v4-final}
mkdir -p "$OUT"
STAMP=$(mktemp); touch "$STAMP"
step() { local name=$1 limit=$2; shift 2; local t=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; echo "===== $name rc=$? $(( $(date +%s) - t ))s"; }
step bench 150 python3 -m stages bench v3_wgmma_tma v4_swizzle_pipeline v5_fused_epilogue cublas --shape 4096x4096x4096 --shape 8192x8192x8192 --shape 4096x14336x4096 --publish
step probe 80 python3 scripts/lever_probe.py --only v4 --v4 v4,v4-dp,v4-9c65b8b --rounds 6 --out "$OUT"
SK="--shape 2048x3328x2048 --shape 1536x3072x1024 --shape 2048x3328x64 --shape 2048x3328x128 --shape 4096x4096x4096 --shape 4096x14336x4096 --shape 8192x8192x8192"
(step v4-verify 200 python3 -m stages verify v4_swizzle_pipeline $SK --repeat 3
 step v4-verify-cluster 90 python3 -m stages verify v4_swizzle_pipeline --set CLUSTER_M=2 $SK
 step v4-verify-direct 90 python3 -m stages verify v4_swizzle_pipeline --set TMA_STORE=0 $SK
 step v4-verify-sweep 120 python3 -m stages verify v4_swizzle_pipeline --repeat 2) &
step suite 380 python3 -m pytest -q -p no:cacheprovider -rs tests/
wait
find results -name '*.json' -newer "$STAMP" | tar czf "$OUT/new-records.tgz" -T - 2>/dev/null
tail -n 12 "$OUT/bench.log"; grep -h "plain:" "$OUT/probe.log"; tail -n 2 "$OUT/suite.log"
for f in "$OUT"/v4-verify*.log; do tail -n 1 "$f"; done
