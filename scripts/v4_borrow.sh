#!/usr/bin/env bash
# One H200 call for EPI_BORROW (v4): side by side with the shipped build and the pre-stream-K
# kernel (lever_probe, interleaved), then its correctness: verify on the stream-K shapes and the
# sweep with repeats, racecheck and synccheck on a split shape.
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/v4_borrow.sh
set -u
source "$(dirname "$0")/budgeted_run.sh"   # call_setup; run NAME LIMIT_S CMD... (each step's log: $OUT/NAME.log)
call_setup /tmp/v4-borrow
run probe 90 python3 scripts/lever_probe.py --only v4 --v4 v4,v4-borrow,v4-9c65b8b --rounds 8 --out "$OUT"
SK="--shape 2048x3328x2048 --shape 1536x3072x1024 --shape 2048x3328x64 --shape 2048x3328x128 --shape 4096x4096x4096 --shape 4096x14336x4096 --shape 8192x8192x8192"
run verify-sk 90 python3 -m stages verify v4_swizzle_pipeline --set EPI_BORROW=1 $SK --repeat 3
run verify-sweep 90 python3 -m stages verify v4_swizzle_pipeline --set EPI_BORROW=1 --repeat 3
run racecheck 120 compute-sanitizer --tool racecheck --error-exitcode 3 python3 -m stages verify v4_swizzle_pipeline --set EPI_BORROW=1 --shape 1536x3072x1024 --shape 256x512x256
run synccheck 60 compute-sanitizer --tool synccheck --error-exitcode 3 python3 -m stages verify v4_swizzle_pipeline --set EPI_BORROW=1 --shape 1536x3072x1024 --shape 256x512x256
grep -h "plain:" "$OUT/probe.log"; for f in verify-sk verify-sweep racecheck synccheck; do tail -n 2 "$OUT/$f.log"; done
