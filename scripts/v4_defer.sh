#!/usr/bin/env bash
# One H200 call for EPI_DEFER (v4): correctness first (verify sweep twice, the issue shapes with
# and without stream-K's split, with a 2-CTA cluster and with 4-byte staging stores; racecheck
# and synccheck), then side by side with the shipped build (lever_probe, interleaved rounds).
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/v4_defer.sh
set -u
source "$(dirname "$0")/budgeted_run.sh"   # call_setup; run NAME LIMIT_S CMD... (each step's log: $OUT/NAME.log)
call_setup /tmp/v4-defer
D="--set EPI_DEFER=${DEFER:-1}"
BIG="--shape 4096x4096x4096 --shape 4096x14336x4096 --shape 8192x8192x8192 --shape 128x256x64 --shape 256x256x4096 --shape 384x768x192 --shape 4096x4352x4096 --shape 1280x2560x320"
run verify-defer 120 python3 -m stages verify v4_swizzle_pipeline $D --repeat 2
run verify-defer-big 90 python3 -m stages verify v4_swizzle_pipeline $D $BIG
[ -z "${QUICK:-}" ] && run verify-defer-c2 60 python3 -m stages verify v4_swizzle_pipeline $D --set CLUSTER_M=2 $BIG
[ -z "${QUICK:-}" ] && run verify-defer-st 40 python3 -m stages verify v4_swizzle_pipeline $D --set STMATRIX=0 --quick
run probe 240 python3 scripts/lever_probe.py --only v4 --v4 ${V4SET:-v4,v4-dp,v4-defer,v4-defer-dp,v4-noepi} --rounds ${ROUNDS:-6} --out "$OUT"
[ -z "${QUICK:-}" ] && run racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 3 python3 -m stages verify v4_swizzle_pipeline $D --shape 512x768x256 --shape 1280x2560x320
[ -z "${QUICK:-}" ] && run synccheck 40 compute-sanitizer --tool synccheck --error-exitcode 3 python3 -m stages verify v4_swizzle_pipeline $D --shape 512x768x256
grep -h "plain:" "$OUT/probe.log"; for f in verify-defer verify-defer-big verify-defer-c2 verify-defer-st racecheck synccheck; do tail -n 2 "$OUT/$f.log"; done
