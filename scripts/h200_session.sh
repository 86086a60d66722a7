#!/usr/bin/env bash
# One call on the lent H200 (see README "Running on a GPU machine"): tests, the correctness sweep,
# the benchmark and tuning sweeps, each step time-limited so a hung kernel cannot eat the lease.
# Usage there:  GEMM_STAGES_COMMIT=<sha> bash scripts/h200_session.sh STEP...   (default: all)
# Steps: env inspect tests alltests alltests-reversed verify verify-v3 bench overhead tune ceilings
#        sizes notebooks-live sanitize stress.  Logs and JSON records go to $OUT (max 8 files); records
#        that steps publish land in results/ there and are copied to $OUT.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT"
LOG="$OUT/session.log"
steps=${*:-env inspect tests verify bench tune}
GPU_STAGES=$(python3 -c "import stages; print(' '.join(stages.names()))")

run() {  # run NAME LIMIT_S CMD...: output appended to session.log, a one-line summary printed
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  echo "===== $name: $*" >>"$LOG"
  timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
  local rc=$?
  echo "===== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$LOG"
}

for step in $steps; do
  case $step in
    env)
      run env 60 bash -c 'nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; python3 -c "import cupy, numba, numpy, sys; print(sys.version); print(cupy.__version__, numba.__version__, numpy.__version__)"; python3 -m stages list' ;;
    inspect)
      run inspect 180 python3 -m stages inspect ;;
    tests)
      run tests 420 python3 -m pytest -q -p no:cacheprovider -m "gpu or hopper" tests/ ;;
    alltests)  # the whole suite, CPU tests too (notebook tests skip where nbclient is missing)
      run alltests 540 python3 -m pytest -q -p no:cacheprovider -rs tests/ ;;
    alltests-reversed)  # the same suite in reverse order: state leaking between tests shows here
      run alltests-reversed 540 python3 -m pytest -q -p no:cacheprovider -rs --order reverse tests/ ;;
    suites)  # both orders at once (two processes on one GPU: no test asserts a time)
      ( timeout --kill-after=10 540 python3 -m pytest -q -p no:cacheprovider -rs tests/ > "$OUT/suite-file-order.log" 2>&1; echo "file order rc=$?" >> "$OUT/suite-file-order.log" ) &
      ( timeout --kill-after=10 540 python3 -m pytest -q -p no:cacheprovider -rs --order reverse tests/ > "$OUT/suite-reversed.log" 2>&1; echo "reversed rc=$?" >> "$OUT/suite-reversed.log" ) &
      wait
      tail -n 3 "$OUT/suite-file-order.log" "$OUT/suite-reversed.log" | tee -a "$LOG" ;;
    verify)
      run verify 420 python3 -m stages verify $GPU_STAGES cublas ;;
    verify-v3)
      run verify-v3 420 python3 -m stages verify v3_wgmma_tma --repeat 20 ;;
    bench)
      run bench 420 python3 -m stages bench $GPU_STAGES cublas --shape 4096x4096x4096 --shape 8192x8192x8192 --publish
      ls -t results/*.json | head -1 | while read f; do cp "$f" "$OUT/"; done ;;
    overhead)
      run overhead 240 python3 -m stages bench --overhead --publish
      ls -t results/*.json | head -1 | while read f; do cp "$f" "$OUT/"; done ;;
    tune)
      run tune-v1 240 python3 -m stages tune v1_tiled --set BK=16,32 --shape 4096x4096x4096 --out "$OUT/tune-v1.json"
      run tune-v2 300 python3 -m stages tune v2_cp_async --set STAGES=3,4 --set BN=128,256 --set WN=32,64 --shape 4096x4096x4096 --shape 8192x8192x8192 --out "$OUT/tune-v2.json"
      run tune-v3 300 python3 -m stages tune v3_wgmma_tma --set STAGES=3,4,5 --set BN=128,256 --shape 4096x4096x4096 --shape 8192x8192x8192 --out "$OUT/tune-v3.json" ;;
    ceilings)
      run ceilings 180 python3 -m stages ceilings --publish
      ls -t results/*.json | head -1 | while read f; do cp "$f" "$OUT/"; done ;;
    sizes)  # TFLOP/s against size, square shapes 256..8192, every stage and cuBLAS
      run sizes 540 python3 -m stages bench $GPU_STAGES cublas \
        --shape 256x256x256 --shape 512x512x512 --shape 1024x1024x1024 --shape 2048x2048x2048 \
        --shape 4096x4096x4096 --shape 8192x8192x8192 --out "$OUT/sizes.json" ;;
    notebooks-live)  # every notebook's code with LIVE=1: re-measures, writes records to results/
      run notebooks-live 540 env GEMM_STAGES_LIVE=1 GEMM_STAGES_FIGURES=/tmp/live-figures python3 scripts/run_notebook_code.py notebooks/*.ipynb
      git status --porcelain results 2>/dev/null; ls -t results/*.json | head -6 | while read f; do cp "$f" "$OUT/"; done ;;
    sanitize)
      run memcheck 240 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 scripts/sanitize_probe.py
      run racecheck 300 compute-sanitizer --tool racecheck --error-exitcode 3 python3 scripts/sanitize_probe.py v1_tiled v2_cp_async ;;
    stress)  # issue 14: random shapes, sanitizers, streams/threads, values, hostile calls, leaks, faults
      # (STRESS_ARGS, e.g. "v0_naive v1_tiled --quick", narrows it; --budget keeps it inside the limit)
      run stress 590 python3 -m stages.tools.stress --publish --budget 540 ${STRESS_ARGS:-}
      ls -t results/*stress*.json 2>/dev/null | head -1 | while read f; do cp "$f" "$OUT/"; done ;;
    *) echo "unknown step $step" ;;
  esac
done
grep -E "^=====|passed|failed|FAIL|error" "$LOG" | tail -n 60
