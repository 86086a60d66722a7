# Sourced by the device scripts (v5_device.sh, final_device.sh): `run NAME LIMIT_S CMD...` runs a
# step under `timeout`, never past the call's budget (BUDGET seconds from T0; a step that would
# start with under 15 s left is skipped and says so), and logs "===== NAME rc=... Ns" to $LOG.
# The step's output goes to $LOG, or, when STEP_LOGS names a folder, to STEP_LOGS/NAME.log with
# its last 4 lines copied to $LOG (steps run in parallel then keep their logs apart).
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
