#!/usr/bin/env bash
# One H200 call for v5's per-call builds (STREAMK=0 where the kernel does not split, EPI_DEFER at
# 128 x 256 only, the pass loops written out): every epilogue on the sweep, the odd and the fill
# shapes (x2), the plain sweep x3, then side by side (lever_probe: the issue's shapes with the
# fused epilogues, the small and mid-size grids beside v4 with the same tile), then racecheck /
# memcheck / synccheck on a multi-tile STREAMK=0 shape, a stream-K shape and a tail shape.
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/v5_percall_device.sh
set -u
source "$(dirname "$0")/budgeted_run.sh"   # call_setup; run NAME LIMIT_S CMD... (each step's log: $OUT/NAME.log)
call_setup /tmp/v5-percall
ODD="--shape 1x7x13 --shape 3x1000x4104 --shape 17x4097x1 --shape 129x7x4104 --shape 1000x1000x1000 --shape 4095x4097x4104 --shape 1x4096x4096 --shape 16x14336x4096 --shape 4095x1000x13"
FILL="--shape 128x4096x4096 --shape 200x2001x4103 --shape 256x2048x8192 --shape 128x12288x8192 --shape 1000x1000x4096 --shape 1001x999x4100 --shape 2048x2560x256 --shape 1536x3072x1024 --shape 4096x4096x4096 --shape 2100x2600x200 --shape 2048x2048x4096 --shape 2048x1024x1024"
SMALL="2048x2048x1024,2048x1024x1024,1024x2048x2048,2048x2048x4096,1000x1000x1000,1024x1024x1024,128x4096x4096,256x4096x4096,1000x1000x4096,4096x4096x1024"
if [ -z "${SKIP_VERIFY:-}" ]; then
  run v5-verify-all 250 python3 -m stages verify v5_fused_epilogue --epilogue all &
  run v5-verify-odd 200 python3 -m stages verify v5_fused_epilogue $ODD --epilogue all &
  run v5-verify-fill 250 python3 -m stages verify v5_fused_epilogue $FILL --epilogue all --repeat 2 &
  run v5-verify-plain 200 python3 -m stages verify v5_fused_epilogue --repeat 3 &
  wait
fi
run probe 240 python3 scripts/lever_probe.py --only v4,v5,small --v4 v4 --small v5,v4-128 --small-shapes $SMALL --rounds ${ROUNDS:-6} --out "$OUT"
if [ -z "${SKIP_SANITIZE:-}" ]; then
  run racecheck 150 compute-sanitizer --tool racecheck --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue --shape 2048x2560x256 --shape 2100x2600x200 --shape 1536x3072x896 &
  run synccheck 150 compute-sanitizer --tool synccheck --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue --shape 2048x2560x256 --shape 1536x3072x896 &
  run memcheck 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue --shape 2048x2560x256 --shape 2100x2600x200 --shape 1536x3072x896 &
  wait
fi
grep -h "plain:\|bias" "$OUT/probe.log" | grep -v Traceback
for f in "$OUT"/v5-verify*.log "$OUT"/racecheck.log "$OUT"/synccheck.log "$OUT"/memcheck.log; do [ -f "$f" ] && { echo "== $(basename $f)"; tail -n 3 "$f"; }; done
