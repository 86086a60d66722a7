#!/usr/bin/env bash
# One H200 call for v5's in-kernel split-K sum (SPLIT_FIXUP=1: the unit that completes a tile sums
# its partials, no reduce kernel): the split tests of tests/test_v5.py (bitwise against the reduce
# kernel, judged against float64), memcheck and synccheck on split shapes; then, timed one after
# another, lever_probe's "split" section (against the reduce kernel, and fixed splits on decode
# shapes) and "clean" section (the bench's dirty-L2 flush against a clean one), and
# scripts/clock_probe.py (the SM clock and power under back-to-back GEMMs).
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/split_device.sh
set -u
source "$(dirname "$0")/budgeted_run.sh"   # call_setup; run NAME LIMIT_S CMD... (each step's log: $OUT/NAME.log)
call_setup /tmp/split
SPLIT="--shape 1x4096x4096 --shape 17x1000x4104 --shape 3x7x1000 --shape 33x3000x4099 --shape 64x2048x8192"
run tests 240 python3 -m pytest -q -x tests/test_v5.py -k "split or every_path or repeatable" &
run memcheck 240 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue $SPLIT &
run synccheck 240 compute-sanitizer --tool synccheck --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue $SPLIT &
wait
run probe 240 python3 scripts/lever_probe.py --only ${SECTIONS:-split,clean} --rounds ${ROUNDS:-4} --out "$OUT"
run clock 60 python3 scripts/clock_probe.py --out "$OUT"
grep -h "plain" "$OUT/probe.log"
for f in tests memcheck synccheck clock; do [ -f "$OUT/$f.log" ] && { echo "== $f"; tail -n 6 "$OUT/$f.log"; }; done
