#!/usr/bin/env bash
# One H200 call for v4's two-loop work list and per-call build (commit cf845e8): the published
# plain table of the GPU stages from v3 (bench --publish), the old/new side by side
# (lever_probe), then correctness: the whole suite beside v4's stream-K verify steps.
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/v4_final.sh
set -u
source "$(dirname "$0")/budgeted_run.sh"   # call_setup; run NAME LIMIT_S CMD... (each step's log: $OUT/NAME.log)
call_setup /tmp/v4-final
STAMP=$(mktemp); touch "$STAMP"
run bench 150 python3 -m stages bench v3_wgmma_tma v4_swizzle_pipeline v5_fused_epilogue cublas --shape 4096x4096x4096 --shape 8192x8192x8192 --shape 4096x14336x4096 --publish
run probe 80 python3 scripts/lever_probe.py --only v4 --v4 v4,v4-dp,v4-9c65b8b --rounds 6 --out "$OUT"
# v4's stream-K verify steps (the shipped build, CLUSTER_M=2, TMA_STORE=0) as v5_device.sh runs them
((OUT=$OUT BUDGET_S=$(( BUDGET - 200 )) LOG=$OUT/sk.log bash "$(dirname "$0")/v5_device.sh" v4-sk-check >/dev/null)
 run v4-verify-sweep 120 python3 -m stages verify v4_swizzle_pipeline --repeat 2) &
run suite 380 python3 -m pytest -q -p no:cacheprovider -rs tests/
wait
find results -name '*.json' -newer "$STAMP" | tar czf "$OUT/new-records.tgz" -T - 2>/dev/null
tail -n 12 "$OUT/bench.log"; grep -h "plain:" "$OUT/probe.log"; tail -n 2 "$OUT/suite.log"
grep "=====.*rc=" "$OUT/sk.log"; tail -n 1 "$OUT/v4-verify-sweep.log"
