#!/usr/bin/env bash
# Issue 11 ("Show, don't tell"), one call on the lent H200, <= 6 minutes, never hangs: every step
# runs under `timeout`, and steps that would start past the budget are skipped (and say so).
#   (a) verify every new switch value (verify --quick --set ...)
#   (b) time the ablation ladders, one tune run per stage, published to results/tuning/
#   (d) Nsight Compute profile of every stage (+ the two bank-conflict ablations), published
#   (c) the "break it" exercises, expected to fail verify (run last: a race could hang)
#   (e) the records published by this run, the ncu reports and the log -> one tarball in $OUT
# Usage, from the repository root:  GEMM_STAGES_COMMIT=<sha> OUT=/some/dir bash scripts/issue11_device.sh
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/issue11-out}
PY=${PYTHON:-python3}
BUDGET=${BUDGET_S:-345}           # seconds for the whole script (the call's limit is 6 minutes)
mkdir -p "$OUT"
LOG="$OUT/issue11.log"
T0=$(date +%s)
STAMP=$(mktemp); touch "$STAMP"   # records newer than this were published by this run
summary=()

run() {  # run NAME LIMIT_S CMD...: output to the log, one summary line; sets RC (124 = timed out)
  local name=$1 limit=$2; shift 2
  local left=$(( BUDGET - ($(date +%s) - T0) ))
  if (( left < 15 )); then
    RC=125; echo "===== $name: SKIPPED (budget spent)" | tee -a "$LOG"; summary+=("$name: skipped (budget)"); return
  fi
  (( limit > left )) && limit=$left
  local t=$(date +%s)
  echo "===== $name: $*" >>"$LOG"
  timeout --kill-after=5 "$limit" "$@" >>"$LOG" 2>&1
  RC=$?
  echo "===== $name rc=$RC $(( $(date +%s) - t ))s" | tee -a "$LOG"
}

expect_pass() { run "$@"; summary+=("$1: $([ $RC = 0 ] && echo ok || echo "FAILED rc=$RC")"); }

{ echo "issue11 device run $(date -u +%FT%TZ), commit ${GEMM_STAGES_COMMIT:-unset}";
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1;
  command -v ncu || ls /usr/local/cuda/bin/ncu 2>&1; } >>"$LOG"

# (a) every new switch value is still correct (checks only, no timing: run side by side)
par() {  # par NAME LIMIT_S CMD...: in the background, its own log; collected by collect
  local name=$1 limit=$2; shift 2
  local left=$(( BUDGET - ($(date +%s) - T0) ))
  if (( left < 15 )); then echo 125 >"$OUT/.$name.rc"; echo "skipped: budget spent" >"$OUT/.$name.log"; return; fi
  (( limit > left )) && limit=$left
  ( timeout --kill-after=5 "$limit" "$@" >"$OUT/.$name.log" 2>&1; echo $? >"$OUT/.$name.rc" ) &
}
collect() {  # collect MODE NAME...: append the logs, one summary line each (MODE pass or fail)
  local mode=$1; shift
  wait
  for name in "$@"; do
    RC=$(cat "$OUT/.$name.rc" 2>/dev/null || echo 125)
    { echo "===== $name rc=$RC"; cat "$OUT/.$name.log"; } >>"$LOG"; rm -f "$OUT/.$name.log" "$OUT/.$name.rc"
    if [ "$mode" = pass ]; then summary+=("$name: $([ "$RC" = 0 ] && echo ok || echo "FAILED rc=$RC")")
    else case $RC in
      1) summary+=("$name: failed as expected") ;;
      0) summary+=("$name: UNEXPECTEDLY PASSED (the race did not show this time)") ;;
      124|137) summary+=("$name: TIMED OUT (a hang, killed by timeout)") ;;
      *) summary+=("$name: rc=$RC") ;;
    esac; fi
    echo "${summary[-1]}"
  done
}
par verify-v0-MAP1  60 $PY -m stages verify v0_naive --quick --set MAP=1
par verify-v0-MAP2  60 $PY -m stages verify v0_naive --quick --set MAP=2
par verify-v1-PAD0  60 $PY -m stages verify v1_tiled --quick --set PAD=0
par verify-v1-T4x4  60 $PY -m stages verify v1_tiled --quick --set BM=64 --set BN=64 --set BK=32 --set TM=4 --set TN=4
par verify-v2-SWZ0  60 $PY -m stages verify v2_cp_async --quick --set SWIZZLE=0
par verify-v3-FENCE 60 $PY -m stages verify v3_wgmma_tma --quick --set BREAK_FENCE=1
collect pass verify-v0-MAP1 verify-v0-MAP2 verify-v1-PAD0 verify-v1-T4x4 verify-v2-SWZ0 verify-v3-FENCE

# (b) the ablation ladders, one run per stage (each variant verified by tune before it is timed)
expect_pass tune-v0 60 $PY -m stages tune v0_naive --variant MAP=1 --variant MAP=2 --variant default \
  --shape 1024x1024x1024 --publish
expect_pass tune-v1 60 $PY -m stages tune v1_tiled --variant PAD=0 --variant BK=32 --variant BK=32,TN=4 \
  --variant BM=64,BN=64,BK=32,TM=4,TN=4 --variant default --shape 4096x4096x4096 --publish
expect_pass tune-v2 60 $PY -m stages tune v2_cp_async --variant SWIZZLE=0 --variant GROUP_M=1 --variant STAGES=2 \
  --variant STAGES=4 --variant default --shape 4096x4096x4096 --shape 8192x8192x8192 --publish
expect_pass tune-v3 60 $PY -m stages tune v3_wgmma_tma --variant GROUP_M=1 --variant STAGES=3 --variant BN=128 \
  --variant BREAK_FENCE=1 --variant default --shape 4096x4096x4096 --shape 8192x8192x8192 --publish

# (d) the bottleneck, measured (before the breaks: a hung break cannot eat the profile's time)
expect_pass profile 170 $PY -m stages profile v0_naive v1_tiled 'v1_tiled[PAD=0]' v2_cp_async \
  'v2_cp_async[SWIZZLE=0]' v3_wgmma_tma v4_swizzle_pipeline --publish --keep-reports "$OUT/ncu-reports"

# (c) break it: each must fail verify (side by side; a hang is cut by its timeout)
par break-v1-SYNC       45 $PY -m stages verify v1_tiled --quick --set BREAK_SYNC=1
par break-v2-WAIT       45 $PY -m stages verify v2_cp_async --quick --set BREAK_WAIT=1
par break-v2-WAIT-S2    45 $PY -m stages verify v2_cp_async --quick --repeat 3 --set BREAK_WAIT=1 --set STAGES=2
par break-v3-FULL_WAIT  45 $PY -m stages verify v3_wgmma_tma --quick --set BREAK_FULL_WAIT=1
par break-v3-EMPTY_WAIT 45 $PY -m stages verify v3_wgmma_tma --quick --repeat 5 --set BREAK_EMPTY_WAIT=1
collect fail break-v1-SYNC break-v2-WAIT break-v2-WAIT-S2 break-v3-FULL_WAIT break-v3-EMPTY_WAIT

# (e) what this run published and the log in one file; ncu's reports in another (they can be big)
{ echo; echo "===== summary ($(( $(date +%s) - T0 ))s)"; printf '%s\n' "${summary[@]}"; } | tee -a "$LOG"
find results -name '*.json' -newer "$STAMP" -not -path 'results/runs/*' | sort > "$OUT/published.txt"
tee -a "$LOG" < "$OUT/published.txt"
tar -czf "$OUT/issue11-records.tar.gz" -T "$OUT/published.txt" -C "$OUT" issue11.log published.txt 2>>"$LOG"
if [ -d "$OUT/ncu-reports" ]; then
  tar -czf "$OUT/issue11-ncu-reports.tar.gz" -C "$OUT" ncu-reports 2>>"$LOG" && rm -rf "$OUT/ncu-reports"
fi
rm -f "$STAMP"
ls -la "$OUT"
