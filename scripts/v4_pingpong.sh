#!/usr/bin/env bash
# One H200 call for PINGPONG (v4): correctness first (verify sweep and the issue shapes, with and
# without a cluster; racecheck and synccheck), then side by side with the shipped build
# (lever_probe, interleaved rounds): v4-pp, v4-pp4, v4-pp-c2 and v4-128 (see its docstring).
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/v4_pingpong.sh
set -u
source "$(dirname "$0")/budgeted_run.sh"   # call_setup; run NAME LIMIT_S CMD... (each step's log: $OUT/NAME.log)
call_setup /tmp/v4-pingpong
PP="--set PINGPONG=1 --set BN=128 --set STREAMK=0 --set STAGES=6"
BIG="--shape 4096x4096x4096 --shape 4096x14336x4096 --shape 8192x8192x8192 --shape 128x128x64 --shape 256x128x4096 --shape 384x640x192"
run verify-pp 120 python3 -m stages verify v4_swizzle_pipeline $PP --repeat 2
run verify-pp-big 90 python3 -m stages verify v4_swizzle_pipeline $PP $BIG
run verify-pp-c2 90 python3 -m stages verify v4_swizzle_pipeline $PP --set CLUSTER_M=2 $BIG
run verify-pp-ldst 60 python3 -m stages verify v4_swizzle_pipeline $PP --set TMA_STORE=0 --quick
run probe 240 python3 scripts/lever_probe.py --only v4 --v4 ${V4SET:-v4,v4-dp,v4-pp,v4-pp4,v4-pp-c2,v4-128} --rounds ${ROUNDS:-6} --out "$OUT"
run racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 3 python3 -m stages verify v4_swizzle_pipeline $PP --shape 512x512x256 --shape 128x384x128
run synccheck 40 compute-sanitizer --tool synccheck --error-exitcode 3 python3 -m stages verify v4_swizzle_pipeline $PP --shape 512x512x256
grep -h "plain:" "$OUT/probe.log"; for f in verify-pp verify-pp-big verify-pp-c2 verify-pp-ldst racecheck synccheck; do tail -n 2 "$OUT/$f.log"; done
