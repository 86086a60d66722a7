#!/usr/bin/env bash
# One call on the lent H200 (the `device` tool runs it from the working tree). Every step runs under
# `timeout`, the whole call under a budget, so a call never hangs and always brings back what it
# has: $OUT/final.log (each step's command, exit code, seconds and last lines), $OUT/logs.tgz (each
# step's whole log and the JSON it wrote) and $OUT/new-records.tgz (the records it published under
# results/; `tar xzf` it in the repository, then `python -m stages report --write` before the next
# suite runs: the READMEs' generated blocks must match the newest records).
#
#   GEMM_STAGES_COMMIT=<full sha> BUDGET_S=560 OUT=$OUT bash scripts/device.sh MODE
#
# GEMM_STAGES_COMMIT is the commit the records name (the device's copy has no usable git history).
# BUDGET_S bounds the call: a step that would start with under 15 s left is skipped and says so,
# and no step runs past it; keep it ~20 s under the call's own limit so the tarballs get written.
# DRY_RUN=1 prints each step instead of running it (tests/test_device_script.py).
# REQUIRE_GPU=H200 stops the call at once, exit 3 and nothing run, unless nvidia-smi names that GPU:
# the device tool may lend an H100 to a call that asked for an H200, and a timing meant for the
# H200's records is then spent for nothing (checked in a dry run too).
#
# Modes, each one call on a cold machine (~90-120 s to start, not counted in BUDGET_S):
#   suite     the whole suite in ORDER (file, the default, or reverse) as PARTS (8) contiguous slices
#             at once (tests/conftest.py's --part), each its own process with its own kernel cache:
#             a cold cache costs one slice's builds in parallel, not the suite's in series. The
#             slices hold equal shares of the time each test took here (TIMES, by default
#             tests/suite_times_h200.json; TIMES= for equal counts), because the time is not
#             spread evenly: in 16 equal-count slices at c122e27 (2026-12-03) fifteen took 17-232 s
#             and the 16th, the end of test_v5.py with its knob builds, was cut at 500 s after 75 of
#             its 106 tests. By time at 4d3e7fa (the same day) the whole suite fit one call: 8 slices
#             of 157-238 s in file order, 54-143 s in reverse (a warm machine), 1,692 passed and
#             4 skipped in each. Each slice writes its JUnit XML to the logs; scripts/suite_times.py
#             merges them into TIMES. With PART=START:STOP, that range of the order alone (to
#             finish a cut slice: each slice prints its first item's index and how to resume it).
#   checks    v5 (correctness only): the whole verify sweep with every epilogue case, the issue's odd
#             shapes with every epilogue case 20 times with fresh inputs, and memcheck, racecheck and
#             synccheck with every epilogue case on odd, stream-K, split-in-pairs and paired shapes
#   sanitize  memcheck, racecheck and synccheck at once, every epilogue case, of v5 on SHAPES (MxNxK,
#             comma- or space-separated), as the rule builds it or with knobs (SET="AUTO=0 BM=192 ...")
#   stress    `stages stress` for every stage (random shapes, sanitizers, repeats, concurrency,
#             hostile calls, special values, leaks, faults), published, alone on the GPU
#   publish   the published benches, alone on the GPU: the main job (every stage, cuBLAS and the CPU
#             baseline at 4096^3), v5's shapes beside v4 and cuBLAS, the fused epilogues with v5's
#             plain GEMM in the same rounds, the large shapes with v4 and v5
#   refresh   v5 beside cuBLAS at every shape of v5's README "Measured" table (its generated block),
#             published, in PARTS (5) steps of STEP_S (100) s each: each row then reads the kernel
#             as it is, not as it was when that shape was last timed
#   ablation  v4's ablation ladder (published; the rung names are in stages/v4_swizzle_pipeline/why.py)
#   probe     scripts/overlap_probe.py: knob variants judged against float64 on VERIFY shapes, then
#             timed in interleaved rounds on SHAPES (env: VARIANTS, SHAPES, VERIFY, EPILOGUES, ROUNDS)
#   cpu       scripts/cpu_probe.py on the host's cores (no GPU): the CPU baseline and numpy by thread
#             count, and the baseline's block sizes around the shipped ones (env: SIZES, ROUNDS)
#   ncu       Nsight Compute's warp-state samples per SASS instruction of one launch (the second) of
#             SPEC at M N K (env; EPILOGUE optional, KERNEL a regex of the kernel's name), boost
#             clocks as the bench runs; summarised by scripts/ncu_sass_summary.py
#   steps     the commands in STEPS, one a line, "NAME LIMIT_S COMMAND ...", in turn, each under its
#             limit and the budget like every step here (a probe, then the tests of what it checks,
#             then a timing, in one call without a hang or a lost log): words split at spaces, no
#             quoting; {logs} is this call's log folder (it comes back in logs.tgz)
#
# Before 2026-12-03 each session added a mode per step to scripts/final_device.sh (134 of them)
# and eleven one-off scripts beside it (h200_session.sh, issue11_device.sh, v5_device.sh, v4_final.sh,
# v4_borrow.sh, v4_pingpong.sh, v4_defer.sh, defer_device.sh, v5_percall_device.sh, bn_device.sh,
# split_device.sh). The READMEs and the records' notes still name those scripts and modes with the
# commit they ran at; every one of them is in `git show 34e2756:scripts/<script>`.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/device-out}
BUDGET=${BUDGET_S:-560}
mkdir -p "$OUT"
LOG="$OUT/final.log"
if [ -z "${DRY_RUN:-}" ]; then
  LOGS=$(mktemp -d)   # per-step logs and JSON, returned as one tarball
  STAMP=$(mktemp)     # the records published after it are this call's
else
  LOGS=/tmp/device-dry-run
fi
T0=$(date +%s)

# run NAME LIMIT_S CMD...: CMD under `timeout`, never past the budget; its output to $LOGS/NAME.log,
# "===== NAME rc=RC Ns" and its last 4 lines to $LOG
run() {
  local name=$1 limit=$2; shift 2
  if [ -n "${DRY_RUN:-}" ]; then echo "$name $limit: $*"; return 0; fi
  local left=$(( BUDGET - ($(date +%s) - T0) ))
  if (( left < 15 )); then echo "===== $name: SKIPPED (budget spent)" | tee -a "$LOG"; return 0; fi
  (( limit > left )) && limit=$left
  local t=$(date +%s)
  echo "===== $name: $*" >>"$LOG"
  # pytest (the suite's slices) is stopped by SIGINT: it then ends the session as if interrupted,
  # so its summary and its JUnit XML (each finished test's time) still get written
  local sig=TERM grace=5
  [[ " $* " == *" pytest "* ]] && sig=INT grace=30
  timeout --signal=$sig --kill-after=$grace "$limit" "$@" >>"$LOGS/$name.log" 2>&1
  echo "===== $name rc=$? $(( $(date +%s) - t ))s" | tee -a "$LOG"
  tail -n 4 "$LOGS/$name.log" >>"$LOG"
  # and each failed test's line from pytest's summary (its first failing check: shape, epilogue,
  # seed, why), which the tail misses behind the skip reasons; final.log comes back without the tarball
  grep -E "^(FAILED|ERROR) " "$LOGS/$name.log" | head -n 20 >>"$LOG"
  return 0
}

# the issue's odd shapes (and one that takes `LM_HEAD`'s tiles with stream-K); the sanitizers' shapes
# (odd, stream-K in the last wave, K split in pairs, 2-CTA pairs, `LM_HEAD`'s tiles at one k-block);
# v5's published shapes (two LM heads among them, `LM_HEAD`); the plain and fused tables' shapes
ODD="--shape 1x7x13 --shape 3x1000x4104 --shape 17x4097x1 --shape 129x7x4104 --shape 1000x1000x1000 --shape 1x4096x4096 --shape 16x14336x4096 --shape 4095x1000x13 --shape 100x40000x2048"
SAN="--shape 17x7x13 --shape 129x300x200 --shape 300x520x4104 --shape 33x2048x1000 --shape 999x1001x1000 --shape 65x33793x64"
V5SHAPES="--shape 128x14336x4096 --shape 16x14336x4096 --shape 1x4096x4096 --shape 4095x4097x4104 --shape 1000x1000x1000 --shape 128x4096x4096 --shape 256x4096x4096 --shape 256x2048x8192 --shape 1000x1000x4096 --shape 72x50304x4096 --shape 100x128256x4096"
BIG="--shape 4096x4096x4096 --shape 8192x8192x8192 --shape 4096x14336x4096"
FUSED="--epilogue plain --epilogue bias+gelu_tanh --epilogue bias+gelu --epilogue bias --epilogue bias+relu --epilogue bias+silu --shape 4096x4096x4096 --shape 8192x8192x8192"
# COLUMNS: pytest cuts a summary line to the terminal width (80 with no terminal) below -vv
PYTEST="env COLUMNS=400 python3 -m pytest -v -p no:cacheprovider -rfEs --tb=short --durations=10"

if [ -n "${REQUIRE_GPU:-}" ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  if [[ "$gpu" != *"$REQUIRE_GPU"* ]]; then
    echo "===== REQUIRE_GPU=$REQUIRE_GPU: this GPU is '${gpu:-none}'; nothing run" | tee -a "$LOG"
    exit 3
  fi
  echo "===== REQUIRE_GPU=$REQUIRE_GPU: $gpu" >>"$LOG"
fi

case ${1:-} in
  suite)
    order=${ORDER:-file} parts=${PARTS:-8} tf=${TIMES-tests/suite_times_h200.json} times=()
    [ -f "$tf" ] && times=(--part-times "$tf")
    if [ -n "${PART:-}" ]; then
      run "suite-$order-${PART/:/-}" "${STEP_S:-520}" $PYTEST --order "$order" --part "$PART" \
        --junitxml "$LOGS/junit-$order-${PART/:/-}.xml" tests/
    else
      for k in $(seq 1 "$parts"); do
        run "suite-$order-$k-of-$parts" "${STEP_S:-520}" $PYTEST --order "$order" --part "$k/$parts" "${times[@]}" \
          --junitxml "$LOGS/junit-$order-$k-of-$parts.xml" tests/ &
      done
      wait
    fi ;;
  checks)
    run v5-verify-full 400 python3 -m stages verify v5_fused_epilogue --epilogue all &
    run v5-odd-20 400 python3 -m stages verify v5_fused_epilogue $ODD --epilogue all --repeat 20 &
    run v5-racecheck 480 compute-sanitizer --tool racecheck --error-exitcode 3 python3 -m stages verify v5_fused_epilogue $SAN --epilogue all &
    (run v5-memcheck 240 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 -m stages verify v5_fused_epilogue $SAN --epilogue all
     run v5-synccheck 200 compute-sanitizer --tool synccheck --error-exitcode 3 python3 -m stages verify v5_fused_epilogue $SAN --epilogue all) &
    wait ;;
  sanitize)
    shapes=${SHAPES:-}
    [ -n "$shapes" ] || { echo "sanitize needs SHAPES=MxNxK,... (and SET=\"K=V ...\" for a knob build)"; exit 2; }
    args=(); for kv in ${SET:-}; do args+=(--set "$kv"); done
    for sh in ${shapes//,/ }; do args+=(--shape "$sh"); done
    for tool in memcheck racecheck synccheck; do
      api=(); [ "$tool" = memcheck ] && api=(--report-api-errors no)  # (cuda-python's cuGetProcAddress probes)
      run "v5-$tool" "${STEP_S:-400}" compute-sanitizer --tool "$tool" "${api[@]}" --error-exitcode 3 \
        python3 -m stages verify v5_fused_epilogue "${args[@]}" --epilogue all &
    done
    wait ;;
  stress)
    run stress "${STEP_S:-520}" python3 -m stages stress --publish --budget $(( ${STEP_S:-520} - 40 )) ;;
  publish)
    run bench-main 120 python3 -m stages bench --publish
    run bench-v5-shapes 120 python3 -m stages bench v4_swizzle_pipeline v5_fused_epilogue cublas $V5SHAPES --publish
    run bench-fused 90 python3 -m stages bench v5_fused_epilogue $FUSED --publish
    run bench-big-v45 60 python3 -m stages bench v4_swizzle_pipeline v5_fused_epilogue cublas $BIG --publish ;;
  refresh)
    # the table's shapes, comma-joined in PARTS groups (a row is "| MxNxK | ..." with x as U+00D7),
    # read from the generated block (the tests hold it to the newest records, which
    # records.latest_results gives), so that a dry run needs no import of the project
    groups=$(python3 - "${PARTS:-5}" <<'PY'
import re, sys
text = open("stages/v5_fused_epilogue/README.md", encoding="utf-8").read()
block = text[text.index("<!-- measured:begin -->"):text.index("<!-- measured:end -->")]
shapes = ["x".join(m) for m in re.findall(r"^\| (\d+)\u00d7(\d+)\u00d7(\d+) \|", block, re.M)]
parts = int(sys.argv[1])
size = -(-len(shapes) // parts)
print(" ".join(",".join(shapes[i:i + size]) for i in range(0, len(shapes), size)))
PY
)
    i=0
    for group in $groups; do
      i=$((i + 1)); args=(); for sh in ${group//,/ }; do args+=(--shape "$sh"); done
      run "bench-refresh-$i" "${STEP_S:-100}" python3 -m stages bench v5_fused_epilogue cublas "${args[@]}" --publish
    done ;;
  ablation)
    run v4-ablation "${STEP_S:-300}" python3 -m stages tune v4_swizzle_pipeline --beside v3_wgmma_tma \
      --variant PERSISTENT=0,ORDER=1,TMA_STORE=0,CLUSTER_M=1,GROUP_M=8,STREAMK=0 \
      --variant PERSISTENT=1,ORDER=1,TMA_STORE=0,CLUSTER_M=1,GROUP_M=8,STREAMK=0 \
      --variant PERSISTENT=1,ORDER=1,TMA_STORE=1,CLUSTER_M=1,GROUP_M=8,STREAMK=0,EPI_DEFER=0 \
      --variant STREAMK=0,EPI_DEFER=0 --variant EPI_DEFER=0 --variant default --variant CLUSTER_M=2 \
      --variant ORDER=2 --variant ORDER=0 --variant ORDER=3 --variant STAGES=3 --variant STMATRIX=0 \
      --variant GROUP_M=32 $BIG --publish ;;
  probe)
    run probe "${STEP_S:-400}" python3 scripts/overlap_probe.py --variants "${VARIANTS:?VARIANTS=v5,K=V,...}" \
      --shapes "${SHAPES:?SHAPES=MxNxK,...}" --verify-shapes "${VERIFY:-999x1001x1000,33x2048x1000,130x5000x5000}" \
      --epilogues "${EPILOGUES:-plain,bias+gelu}" --rounds "${ROUNDS:-5}" --out "$LOGS/probe" ;;
  cpu)
    run cpu-probe "${STEP_S:-300}" python3 scripts/cpu_probe.py --shapes "${SIZES:-1024,2048}" \
      --rounds "${ROUNDS:-5}" --out "$LOGS/cpu-probe.json" ;;
  ncu)
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    tag="${SPEC:?SPEC=stage}-${M:?}x${N:?}x${K:?}"
    mkdir -p "$LOGS/ncu"
    run "ncu-$tag" "${STEP_S:-200}" "$ncu" --target-processes all --kernel-name "regex:${KERNEL:-gemm}" \
      --launch-skip 1 --launch-count 1 --clock-control none --section SourceCounters --section WarpStateStats \
      --section SpeedOfLight --warp-sampling-interval 0 --import-source no --export "$LOGS/ncu/$tag" --force-overwrite \
      python3 -m stages.tools.profile --run "$SPEC" "$M" "$N" "$K" --epilogue "${EPILOGUE:-plain}"
    if [ -z "${DRY_RUN:-}" ]; then
      "$ncu" --import "$LOGS/ncu/$tag.ncu-rep" --csv --page source --print-source sass >"$LOGS/ncu/$tag-sass.csv" 2>&1
      "$ncu" --import "$LOGS/ncu/$tag.ncu-rep" --csv --page details >"$LOGS/ncu/$tag-details.csv" 2>&1
      rm -f "$LOGS/ncu/$tag.ncu-rep"
    fi ;;
  steps)
    [ -n "${STEPS:-}" ] || { echo "steps needs STEPS: one step a line, NAME LIMIT_S COMMAND ..."; exit 2; }
    while IFS= read -r line; do
      [ -n "${line// /}" ] || continue
      read -r name limit rest <<<"$line"
      read -ra cmd <<<"${rest//\{logs\}/$LOGS}"
      run "$name" "$limit" "${cmd[@]}" </dev/null
    done <<<"$STEPS" ;;
  *) echo "usage: [GEMM_STAGES_COMMIT=sha BUDGET_S=s OUT=dir] bash scripts/device.sh MODE, one of: $(grep -oE '^  [a-z]+\)' "$0" | tr -d ' )' | tr '\n' ' ')"; exit 2 ;;
esac
[ -n "${DRY_RUN:-}" ] && exit 0
find results -name '*.json' -newer "$STAMP" | tar czf "$OUT/new-records.tgz" -T - 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$LOGS" .
grep -E "^=====|passed|failed|^(FAILED|ERROR) " "$LOG" | tail -n 60
