# Sourced by the device scripts (v5_device.sh, final_device.sh): `run NAME LIMIT_S CMD...` runs a
# step under `timeout`, never past the call's budget (BUDGET seconds from T0; a step that would
# start with under 15 s left is skipped and says so), and logs "===== NAME rc=... Ns" to $LOG.
# The step's output goes to $LOG, or, when STEP_LOGS names a folder, to STEP_LOGS/NAME.log with
# its last 4 lines copied to $LOG (steps run in parallel then keep their logs apart).
# The head of a one-call script (v4_*.sh, defer_device.sh, v5_percall_device.sh, bn_device.sh):
# `call_setup DEFAULT_OUT` exports the project's path, creates OUT (DEFAULT_OUT unless set), starts
# the budget (BUDGET_S, 560 s) now, and logs to $OUT/run.log with each step's log in $OUT.
call_setup() {
  export PYTHONPATH=. PYTHONUNBUFFERED=1
  OUT=${OUT:-$1}
  mkdir -p "$OUT"
  BUDGET=${BUDGET_S:-560} T0=$(date +%s) LOG="$OUT/run.log" STEP_LOGS="$OUT"
}
run() {
  local name=$1 limit=$2; shift 2
  local left=$(( BUDGET - ($(date +%s) - T0) ))
  if (( left < 15 )); then echo "===== $name: SKIPPED (budget spent)" | tee -a "$LOG"; return; fi
  (( limit > left )) && limit=$left
  local t=$(date +%s) dest=$LOG
  [ -n "${STEP_LOGS:-}" ] && dest="$STEP_LOGS/$name.log"
  echo "===== $name: $*" >>"$LOG"
  timeout --kill-after=5 "$limit" "$@" >>"$dest" 2>&1
  echo "===== $name rc=$? $(( $(date +%s) - t ))s" | tee -a "$LOG"
  [ -n "${STEP_LOGS:-}" ] && tail -n 4 "$dest" >> "$LOG"
  return 0
}
