#!/usr/bin/env bash
# Issues 12-13 on the lent H200, one call (<= ~9.5 minutes), never hangs: every step runs under
# `timeout`, and a step that would start past the budget is skipped (and says so). Logs and JSON
# go to $OUT.  Usage: GEMM_STAGES_COMMIT=<sha> OUT=/dir bash scripts/v5_device.sh STEP...
#   v5-verify   the quick checklist and the issue's odd shapes, every epilogue case
#   v5-memcheck memcheck/racecheck/synccheck of v5 on odd shapes
#   v4-tune     v4's stmatrix switch at the three shapes
#   v4-sk       v4's stream-K last wave: verify on shapes that end on a partial wave (shipped,
#               CLUSTER_M=2, TMA_STORE=0), the GPU tests of v4, and STREAMK 0/1 timed
#   v5-sk       v5 with stream-K: every epilogue on shapes that split the last wave, repeats,
#               sanitizers (v4 and v5) (v5 refuses STREAMK=0 since b3795de: see its __init__)
#   v4-sk-check, v5-sk-check  the same without the timing (safe beside other GPU work)
#   v4-sk-probe where stream-K's time goes (scripts/sk_probe.py): diagnostic copies of the kernel
#   v5-shapes   the shape rule's choice against v4, a few tiles and cuBLAS; fused epilogues vs torch
#   v5-shapes-full  every tile and split
#   v5-fused    bench --epilogue: v5's fused epilogues beside torch's and cuBLAS + CuPy
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/v5-out}
BUDGET=${BUDGET_S:-560}
mkdir -p "$OUT"
LOG=${LOG:-$OUT/v5_device.log}
T0=$(date +%s)
source "$(dirname "$0")/budgeted_run.sh"   # run NAME LIMIT_S CMD...
ODD="--shape 1x7x13 --shape 3x1000x4104 --shape 17x4097x1 --shape 129x7x4104 --shape 1000x1000x1000 --shape 4095x4097x4104 --shape 1x4096x4096 --shape 16x14336x4096 --shape 4095x1000x13"
for step in "$@"; do
  case $step in
    v5-verify)
      run v5-verify-quick 200 python3 -m stages verify v5_fused_epilogue --quick --epilogue all
      run v5-verify-odd 150 python3 -m stages verify v5_fused_epilogue $ODD --epilogue all ;;
    v5-memcheck)
      for tool in memcheck racecheck synccheck; do
        extra=""; [ $tool = memcheck ] && extra="--report-api-errors no"
        run v5-$tool 120 compute-sanitizer --tool $tool $extra --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue --shape 17x7x13 --shape 129x300x200 --shape 1x4097x264 --shape 300x520x4104
      done ;;
    v4-tune)
      # (this session also timed EMPTY_ARRIVE=1, one empty arrival per warpgroup: no faster, and
      # unsafe, so the switch is gone; results/tuning/20261130T094900-nvidia-h200.json)
      run v4-tune 240 python3 -m stages tune v4_swizzle_pipeline --variant default --variant STMATRIX=0 --shape 4096x4096x4096 --shape 8192x8192x8192 --shape 4096x14336x4096 --out "$OUT/tune-v4.json" ;;
    v4-sk-probe)
      run v4-sk-probe 400 python3 scripts/sk_probe.py --out "$OUT" ;;
    v4-sk|v4-sk-check)
      SK="--shape 2048x3328x2048 --shape 1536x3072x1024 --shape 2048x3328x64 --shape 2048x3328x128 --shape 4096x4096x4096 --shape 4096x14336x4096 --shape 8192x8192x8192"
      run v4-sk-verify 150 python3 -m stages verify v4_swizzle_pipeline $SK --repeat 3
      run v4-sk-verify-cluster 90 python3 -m stages verify v4_swizzle_pipeline --set CLUSTER_M=2 $SK
      run v4-sk-verify-direct 90 python3 -m stages verify v4_swizzle_pipeline --set TMA_STORE=0 $SK
      run v4-sk-pytest 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k v4_swizzle
      [ $step = v4-sk ] && run v4-sk-tune 200 python3 -m stages tune v4_swizzle_pipeline --variant default --variant STREAMK=0 --shape 4096x4096x4096 --shape 8192x8192x8192 --shape 4096x14336x4096 --out "$OUT/tune-v4-sk.json" ;;
    v5-sk|v5-sk-check)
      # tests/test_v5.py STREAMK_SHAPES: split last waves, then waves under one shared by every SM (SK_FILL)
      SK5="--shape 4095x4097x4104 --shape 1537x3071x4104 --shape 2048x4352x4100 --shape 1280x5120x8192 --shape 1281x5119x8190 --shape 128x4096x4096 --shape 200x3001x4103 --shape 256x2048x8192"
      run v5-sk-verify 200 python3 -m stages verify v5_fused_epilogue $SK5 --epilogue all
      run v5-sk-verify-repeat 100 python3 -m stages verify v5_fused_epilogue $SK5 --repeat 5
      # every unit stream-K (144 = 132 + 12) at K = 1024 and 2112; the partial wave (208 = 132 + 76)
      # at 2048x3328x2048
      run sk-memcheck 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 scripts/sanitize_probe.py v4_swizzle_pipeline v5_fused_epilogue --shape 1536x3072x1024 --shape 1536x3072x2112 --shape 2048x3328x2048
      run sk-synccheck 150 compute-sanitizer --tool synccheck --error-exitcode 3 python3 scripts/sanitize_probe.py v4_swizzle_pipeline v5_fused_epilogue --shape 1536x3072x1024 --shape 1536x3072x2112 --shape 2048x3328x2048
      [ $step = v5-sk-check ] || run sk-racecheck 200 compute-sanitizer --tool racecheck --error-exitcode 3 python3 scripts/sanitize_probe.py v4_swizzle_pipeline --shape 1536x3072x1024
      run sk-racecheck-v5 200 compute-sanitizer --tool racecheck --error-exitcode 3 python3 scripts/sanitize_probe.py v5_fused_epilogue --shape 1536x3072x2112
      ;;
    v5-shapes)
      run v5-shapes 400 python3 scripts/v5_shapes.py --out "$OUT" ;;
    v5-shapes-full)
      run v5-shapes-full 400 python3 scripts/v5_shapes.py --full --out "$OUT" ;;
    v5-fused)
      run v5-fused 240 python3 -m stages bench v5_fused_epilogue v4_swizzle_pipeline --epilogue bias+gelu_tanh --epilogue bias+gelu --epilogue bias --shape 4096x4096x4096 --shape 8192x8192x8192 --out "$OUT/fused.json" ;;
    *) echo "unknown step $step" ;;
  esac
done
grep -E "^=====|FAIL|passed|Error|error" "$LOG" | tail -n 60
