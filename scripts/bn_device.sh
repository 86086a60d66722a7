#!/usr/bin/env bash
# One H200 call for v5's narrow tiles (wgmma N = 112 and 32, stored directly; at commit ddb82b2
# also 96 and 80): each tile as a fixed choice verified on the odd shapes with every epilogue and
# on the quick sweep; racecheck and synccheck on a 112-wide and a 32-wide tile; then lever_probe's
# "bn" section (each BN beside the shipped rule and cuBLAS, interleaved rounds).
# Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/bn_device.sh
set -u
source "$(dirname "$0")/budgeted_run.sh"   # call_setup; run NAME LIMIT_S CMD... (each step's log: $OUT/NAME.log)
call_setup /tmp/bn
ODD="--shape 1x7x13 --shape 3x1000x4104 --shape 17x4097x1 --shape 129x7x4104 --shape 1000x1000x1000 --shape 4095x4097x4104 --shape 1x4096x4096 --shape 16x14336x4096 --shape 4095x1000x13 --shape 128x14336x4096"
if [ -z "${SKIP_VERIFY:-}" ]; then
  for t in 128:112:6 64:112:9 64:32:16; do
    IFS=: read bm bn st <<<"$t"
    run "verify-$bm-$bn" 200 python3 -m stages verify v5_fused_epilogue --set AUTO=0 --set BM=$bm --set BN=$bn --set STAGES=$st $ODD --epilogue all &
    run "verify-quick-$bm-$bn" 200 python3 -m stages verify v5_fused_epilogue --set AUTO=0 --set BM=$bm --set BN=$bn --set STAGES=$st --quick --repeat 2 &
  done
  wait
  run racecheck 120 compute-sanitizer --tool racecheck --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue --set AUTO=0 --set BN=112 --set STAGES=6 --shape 300x1000x200 --shape 129x4097x136 &
  run synccheck 120 compute-sanitizer --tool synccheck --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue --set AUTO=0 --set BM=64 --set BN=32 --set STAGES=16 --shape 17x1000x200 --shape 1x4097x136 &
  wait
fi
run probe 300 python3 scripts/lever_probe.py --only bn --rounds ${ROUNDS:-4} --out "$OUT"
grep -h "plain:" "$OUT/probe.log"
for f in "$OUT"/verify*.log "$OUT"/racecheck.log "$OUT"/synccheck.log; do [ -f "$f" ] && { echo "== $(basename $f)"; tail -n 2 "$f"; }; done
