#!/usr/bin/env bash
# One H200 call for the deferred store pass (EPI_DEFER=1, shipped in v4 and v5): correctness of
# the shipped builds first (verify sweeps and the issue shapes, every epilogue on odd and fill
# shapes, in parallel), then side by side with EPI_DEFER=0 (lever_probe: v4 section, fused v5,
# small shapes), then racecheck / synccheck / memcheck on shapes where blocks take several tiles
# (so a deferred pass crosses tiles) and on a stream-K shape.
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/defer_device.sh
set -u
source "$(dirname "$0")/budgeted_run.sh"   # call_setup; run NAME LIMIT_S CMD... (each step's log: $OUT/NAME.log)
call_setup /tmp/defer
BIG="--shape 4096x4096x4096 --shape 4096x14336x4096 --shape 8192x8192x8192 --shape 128x256x64 --shape 256x256x4096 --shape 4096x4352x4096 --shape 2048x2560x256 --shape 1536x3072x1024"
ODD="--shape 1x7x13 --shape 3x1000x4104 --shape 17x4097x1 --shape 129x7x4104 --shape 1000x1000x1000 --shape 4095x4097x4104 --shape 1x4096x4096 --shape 16x14336x4096 --shape 4095x1000x13"
FILL="--shape 128x4096x4096 --shape 200x2001x4103 --shape 256x2048x8192 --shape 128x12288x8192 --shape 1000x1000x4096 --shape 1001x999x4100 --shape 2048x2560x256 --shape 1536x3072x1024 --shape 4096x4096x4096 --shape 2100x2600x200"
if [ -z "${SKIP_VERIFY:-}" ]; then
  run v4-verify 150 python3 -m stages verify v4_swizzle_pipeline --repeat 2 &
  run v4-verify-big 150 python3 -m stages verify v4_swizzle_pipeline $BIG &
  run v4-verify-c2 150 python3 -m stages verify v4_swizzle_pipeline --set CLUSTER_M=2 $BIG &
  run v5-verify 200 python3 -m stages verify v5_fused_epilogue --quick --epilogue all &
  run v5-verify-odd 200 python3 -m stages verify v5_fused_epilogue $ODD --epilogue all &
  run v5-verify-fill 200 python3 -m stages verify v5_fused_epilogue $FILL --epilogue all &
  run v5-verify-plain 200 python3 -m stages verify v5_fused_epilogue &
  wait
fi
run probe 240 python3 scripts/lever_probe.py --only ${ONLY:-v4,v5,small} --v4 ${V4SET:-v4,v4-nodefer,v4-noepi} --rounds ${ROUNDS:-6} --out "$OUT"
if [ -z "${SKIP_SANITIZE:-}" ]; then
  run racecheck-v4 150 compute-sanitizer --tool racecheck --error-exitcode 3 python3 scripts/sanitize_probe.py v4_swizzle_pipeline --shape 2048x2560x256 --shape 1536x3072x256 &
  run racecheck-v5 150 compute-sanitizer --tool racecheck --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue --shape 2048x2560x256 --shape 2100x2600x200 &
  run synccheck 150 compute-sanitizer --tool synccheck --error-exitcode 3 python3 scripts/sanitize_probe.py v4_swizzle_pipeline v5_fused_epilogue --shape 2048x2560x256 &
  run memcheck 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 scripts/sanitize_probe.py v4_swizzle_pipeline v5_fused_epilogue --shape 2048x2560x256 --shape 2100x2600x200 &
  wait
fi
grep -h "plain:\|bias" "$OUT/probe.log" | grep -v Traceback
for f in "$OUT"/v4-verify*.log "$OUT"/v5-verify*.log "$OUT"/racecheck*.log "$OUT"/synccheck.log "$OUT"/memcheck.log; do [ -f "$f" ] && { echo "== $(basename $f)"; tail -n 3 "$f"; }; done
