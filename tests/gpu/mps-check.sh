#!/usr/bin/env bash
# MPS check for a real GPU host (issue 20 item 7): what co-running under NVIDIA MPS does on this
# GPU, measured with a PRIVATE MPS control daemon, and the simulator parameters it implies.
# It never changes the GPU's global settings: no `nvidia-smi -c` (compute mode), no
# `compute-policy --set-timeslice`, no `nvidia-smi -pm`. The daemon gets its own pipe and log
# directories (mktemp) and is told `quit` on every exit path; the compute mode and persistence
# mode are recorded before and after, and a change fails the run loudly.
# Steps (each prints PASS/FAIL/SKIP and `mps-check: check=... key=value ...` lines):
#   1 mps_enabled      a client of the private daemon reports CU_DEVICE_ATTRIBUTE_MPS_ENABLED=1;
#                      one whose pipe directory has no daemon reports 0 (MPS fails open)
#   2 pairs            a compute-bound (fma) and a bandwidth-bound (copy) kernel, alone and in
#                      pairs (fma+fma, copy+copy, fma+copy) at CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
#                      25/50/75/100: each one's slowdown vs alone at 100%
#   3 client_limit     trivial clients (cuInit, a context, sleep) started one by one until one
#                      fails (at most --max-clients, default 64): the limit and the error
#   4 context_memory   cuMemGetInfo in 3 clients at each share: device memory per client
#   5 vmm              cuMemCreate/Map/SetAccess, write, Unmap, Map again at the same address
#                      (same and new physical memory), read back, in an MPS client
#   6 checkpoint       cuCheckpointProcessLock/Checkpoint/Restore/Unlock of an MPS client from
#                      a second, non-MPS process (as gshare-arbiter does), contents verified
#                      after; the same for a non-MPS client as the control
#   7 corun_demo       when gshare is built and gshare-arbiter knows corun/mps settings: the
#                      arbiter with --corun-gpus DEV --mps-control nvidia-cuda-mps-control
#                      --mps-dir (its own daemon), two sample-cnn servers of one uid under the
#                      shim as MPS clients of it (50% share, GSHARE_CORUN_DEMAND); the co-run
#                      grants = the summary's corun_joins (SKIP when anything is missing)
#   8 client_list      a client of the private daemon (probe hold) appears in its server's
#                      get_client_list by its pid: what gshare-arbiter's MPS client check (a
#                      reported share believed only once the daemon serves the process) and
#                      terminate_client rely on
# Then "simulator parameters": mps_max_clients, mps_context_mib_per_sm, a SIMCUDA_DEVICES spec
# and the contention model's per-kernel demands fitted to the pair slowdowns
# (tests/gpu/mps_probe.py fit; the model of policy/include/gshare/policy/interference.h).
# Last, on every exit after the preflight, the VERDICT (mps_probe.py verdict; verdict.txt):
# whether `mps_swaps_verified = true` is safe on this GPU (step 5: an MPS client's VMM memory
# unmapped and mapped again at the same addresses, every byte checked, and a device write through
# the remapped address: SAFE, NOT SAFE, or UNKNOWN when step 5 did not run), and the simcuda MPS
# parameters to use for it. Without a GPU the script refuses at once (exit 2) and says that there
# is no verdict: keep mps_swaps_verified = false and simcuda's defaults.
# The helper tests/gpu/mps_probe.py needs only python3 and the driver (ctypes, no build).
# Output: $OUT if set, else ./mps-check-out (or --out DIR): results.txt (the mps-check lines),
# summary.tsv, summary.json, simulator-params.txt, verdict.txt, logs/ (every process's output,
# the daemon's log). NVIDIA_SMI names the nvidia-smi to use (default: the one on PATH).
# Exit: 0 every check passed or skipped, 1 a check failed (including "VMM/checkpoint do not work
# for MPS clients": a finding), 2 refused (no GPU, no nvidia-cuda-mps-control) or setup failed,
# 3 the GPU's global settings changed during the run.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: tests/gpu/mps-check.sh [options]
  --out DIR          output directory (default: $OUT, else ./mps-check-out)
  --build DIR        gshare build (or pack-prebuilt.sh folder) for step 7 (default: build)
  --shares LIST      compute shares in percent (default 25,50,75,100; 100 is always measured)
  --seconds S        measuring window per pair configuration (default 2)
  --max-clients N    most clients step 3 starts (default 64)
  --steps LIST       steps to run, e.g. 1,2,5 (default 1,2,3,4,5,6,7,8)
  --device N         CUDA device ordinal and nvidia-smi index (default 0)
  --dry-run          print the plan and exit, touching no GPU
  -h, --help         this text
Runs in about 3-4 minutes on one GPU (every step has its own time limit). It starts a private
MPS daemon (CUDA_MPS_PIPE_DIRECTORY/CUDA_MPS_LOG_DIRECTORY in a fresh mktemp directory) and
never changes compute mode, time slice or persistence mode. See the header of this file.
EOF
}

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROBE="$ROOT/tests/gpu/mps_probe.py"
O=${OUT:-$PWD/mps-check-out}
B=$ROOT/build
SHARES=25,50,75,100
SECS=2
MAX_CLIENTS=64
STEPS=1,2,3,4,5,6,7,8
DEV=0
DRY=0
while (($#)); do
  case $1 in
    --out) O=${2:?--out needs a directory}; shift 2 ;;
    --build) B=${2:?--build needs a directory}; shift 2 ;;
    --shares) SHARES=${2:?--shares needs a list}; shift 2 ;;
    --seconds) SECS=${2:?--seconds needs a number}; shift 2 ;;
    --max-clients) MAX_CLIENTS=${2:?--max-clients needs a number}; shift 2 ;;
    --steps) STEPS=${2:?--steps needs a list}; shift 2 ;;
    --device) DEV=${2:?--device needs a number}; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "mps-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $SHARES =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "mps-check.sh: --shares '$SHARES' is not a list of percents" >&2; exit 2; }
for s in ${SHARES//,/ }; do ((s >= 1 && s <= 100)) || { echo "mps-check.sh: share $s is not 1..100" >&2; exit 2; }; done
[[ $SECS =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "mps-check.sh: --seconds '$SECS' is not a number" >&2; exit 2; }
if ! [[ $MAX_CLIENTS =~ ^[0-9]+$ ]] || ((MAX_CLIENTS < 2 || MAX_CLIENTS > 64)); then
  echo "mps-check.sh: --max-clients must be 2..64" >&2; exit 2
fi
[[ $STEPS =~ ^[1-8](,[1-8])*$ ]] || { echo "mps-check.sh: --steps '$STEPS' is not a list of 1..8" >&2; exit 2; }
[[ $DEV =~ ^[0-9]+$ ]] || { echo "mps-check.sh: --device must be a number" >&2; exit 2; }
# Shares measured, 100 first (the baseline of every slowdown).
read -r -a SHARE_LIST <<< "$(tr ',' '\n' <<< "100,$SHARES" | sort -rn -u | tr '\n' ' ')"
want() { [[ ",$STEPS," == *",$1,"* ]]; }

if ((DRY)); then
  echo "mps-check.sh plan (dry run: nothing started, no GPU touched)"
  echo "  output: $O   build (step 7): $B   device: $DEV"
  echo "  private MPS daemon: nvidia-cuda-mps-control -d, pipe/log dirs in a fresh mktemp directory; quit on exit"
  echo "  global settings recorded before/after: nvidia-smi --query-gpu=compute_mode,persistence_mode"
  want 1 && echo "  step 1 mps_enabled: probe info with the private pipe dir (expect 1) and an empty one (expect 0)"
  want 2 && echo "  step 2 pairs: shares ${SHARE_LIST[*]}; fma, copy alone; fma+fma, copy+copy, fma+copy; ${SECS} s each"
  want 3 && echo "  step 3 client_limit: up to $MAX_CLIENTS hold clients, one by one, until one fails"
  want 4 && echo "  step 4 context_memory: 3 hold clients at each share ${SHARE_LIST[*]}"
  want 5 && echo "  step 5 vmm: probe vmm in an MPS client at 50%"
  want 6 && echo "  step 6 checkpoint: probe ckpt (non-MPS) on an MPS ckpt-target, then on a non-MPS one"
  want 7 && echo "  step 7 corun_demo: $B/bin/gshare-arbiter --corun-gpus $DEV --mps-control nvidia-cuda-mps-control --mps-dir (its own daemon) + 2 sample-cnn MPS clients under $B/lib/libgshare.so; co-run grants = corun_joins"
  want 8 && echo "  step 8 client_list: probe hold under the private daemon; its pid in get_server_list / get_client_list"
  echo "  then: python3 $PROBE fit --results $O/results.txt"
  exit 0
fi

# --- preflight: refuse without a GPU, an MPS control binary or python3 ------------------------
NVIDIA_SMI=${NVIDIA_SMI:-nvidia-smi}
refuse() {
  echo "mps-check.sh: REFUSED: $*"
  echo "mps-check.sh: no verdict: nothing was measured; keep mps_swaps_verified = false and simcuda's MPS defaults (mps_max_clients = 48, mps_context_mib_per_sm = 2; docs/simcuda.md)"
  exit 2
}
if ! command -v "$NVIDIA_SMI" > /dev/null 2>&1 || ! timeout 30 "$NVIDIA_SMI" -L > /dev/null 2>&1; then
  refuse "no NVIDIA GPU here ($NVIDIA_SMI missing or '$NVIDIA_SMI -L' failed)"
fi
command -v nvidia-cuda-mps-control > /dev/null 2>&1 || refuse "nvidia-cuda-mps-control is not on PATH"
command -v python3 > /dev/null 2>&1 || refuse "python3 is needed (tests/gpu/mps_probe.py)"
[[ "${LD_LIBRARY_PATH:-}" == *simcuda-lib* ]] && refuse "LD_LIBRARY_PATH points at simcuda ($LD_LIBRARY_PATH); unset it"
if ! ldconfig -p 2> /dev/null | grep -q 'libcuda.so.1 '; then
  for d in /usr/local/nvidia/lib64 /usr/lib64 /usr/lib/x86_64-linux-gnu /usr/local/cuda/compat; do
    if [[ -e "$d/libcuda.so.1" ]]; then export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; break; fi
  done
fi

mkdir -p "$O/logs"
L=$O/logs
: > "$O/results.txt"
: > "$O/simulator-params.txt"
echo "mps-check: check=host dev_shm_bytes=$(df -B1 --output=size /dev/shm 2> /dev/null | tail -1 | tr -d ' ' || echo 0)" >> "$O/results.txt"
printf 'check\tstatus\tdetail\n' > "$O/summary.tsv"
T0=$SECONDS
W=$(mktemp -d "/tmp/gshare-mps-check-$$-XXXX")
PIPE=$W/pipe LOGD=$W/log EMPTY=$W/no-daemon
mkdir -p "$PIPE" "$LOGD" "$EMPTY"
PIDS=()
DAEMON=0
FAILED=0
SETTINGS_CHANGED=0

smi_settings() {
  timeout 30 "$NVIDIA_SMI" -i "$DEV" --query-gpu=compute_mode,persistence_mode --format=csv,noheader 2>&1 || echo "query-failed"
}
stop_children() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2> /dev/null || true
    wait "$p" 2> /dev/null || true
  done
  PIDS=()
}
stop_daemon() {
  ((DAEMON)) || return 0
  DAEMON=0
  echo quit | CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_MPS_LOG_DIRECTORY=$LOGD timeout 20 nvidia-cuda-mps-control \
    > "$L/mps-quit.txt" 2>&1 || echo "mps-check: WARNING: 'quit' to the private MPS daemon failed (see $L/mps-quit.txt)"
  # Wait for the daemon (its pid file, only if that pid's environment names our pipe dir).
  local pf pid
  pf=$PIPE/nvidia-cuda-mps-control.pid
  pid=$(cat "$pf" 2> /dev/null || true)
  if [[ $pid =~ ^[0-9]+$ ]] && tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$PIPE"; then
    for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2> /dev/null; then
      echo "mps-check: WARNING: the private MPS daemon (pid $pid) did not quit in 10 s; SIGTERM"
      kill -TERM "$pid" 2> /dev/null || true
    fi
  fi
}
finish() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  stop_children
  stop_daemon
  cp -r "$LOGD" "$L/mps-daemon-log" 2> /dev/null
  AFTER=$(smi_settings)
  echo "mps-check: check=settings before='${BEFORE// /}' after='${AFTER// /}'" >> "$O/results.txt"
  if [[ "$AFTER" != "$BEFORE" ]]; then
    echo "FAIL  GLOBAL GPU SETTINGS CHANGED: compute_mode,persistence_mode was '$BEFORE', now '$AFTER'"
    echo "      (this script never sets them: something else did, or the driver reset them; restore by hand)"
    SETTINGS_CHANGED=1
  else
    echo "PASS  global settings unchanged: compute_mode,persistence_mode = $AFTER"
  fi
  # The verdict: mps_swaps_verified and simcuda's parameters, from what was measured.
  echo
  python3 "$PROBE" verdict --results "$O/results.txt" --simulator "$O/simulator-params.txt" > "$O/verdict.txt" 2>&1 ||
    echo "mps-check: verdict failed: $(tail -1 "$O/verdict.txt")" >> "$O/verdict.txt"
  cat "$O/verdict.txt"
  grep '^mps-check: ' "$O/verdict.txt" >> "$O/results.txt" || true
  python3 - "$O/summary.tsv" "$O/summary.json" "$O/results.txt" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("\t", 2) for l in open(sys.argv[1]).readlines()[1:]]
lines = []
for l in open(sys.argv[3]):
    if l.startswith("mps-check: "):
        kv = {}
        for tok in l[len("mps-check: "):].split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                kv[k] = v
        lines.append(kv)
json.dump({"checks": [{"check": r[0], "status": r[1], "detail": r[2] if len(r) > 2 else ""} for r in rows],
           "measurements": lines}, open(sys.argv[2], "w"), indent=1)
PY
  rm -rf "$W"
  echo "time: $((SECONDS - T0)) s; output in $O"
  if ((SETTINGS_CHANGED)); then rc=3
  elif ((rc == 0)); then rc=$FAILED; fi
  ((rc == 0)) && echo "RESULT: PASS" || echo "RESULT: FAIL (exit $rc)"
  exit "$rc"
}
BEFORE=$(smi_settings)
trap finish EXIT
trap 'echo "mps-check: interrupted"; exit 130' INT TERM

# One result: a human line and the machine-readable line.
report() {  # STATUS CHECK DETAIL [key=value...]
  local st=$1 ck=$2 detail=$3; shift 3
  printf '%-5s %s: %s\n' "$st" "$ck" "$detail"
  printf '%s\t%s\t%s\n' "$ck" "$st" "$detail" >> "$O/summary.tsv"
  echo "mps-check: check=$ck status=$st $*" | tee -a "$O/results.txt"
  [[ $st == FAIL ]] && FAILED=1
  return 0
}
kv() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<< "$1" | head -1; }
# The private daemon's environment: "${MPS[@]}" CMD... (env is exec'd, so $! of "${MPS[@]}" CMD &
# is the process itself and a SIGTERM to it reaches the probe through timeout).
MPS=(env CUDA_MPS_PIPE_DIRECTORY="$PIPE" CUDA_MPS_LOG_DIRECTORY="$LOGD")
wait_file() {  # PATH SECONDS: 0 once PATH exists
  local i
  for ((i = 0; i < $2 * 20; i++)); do [[ -e $1 ]] && return 0; sleep 0.05; done
  return 1
}
probe() { timeout "${PROBE_LIMIT:-60}" python3 "$PROBE" --device "$DEV" "$@"; }
wait_line() {  # FILE PATTERN SECONDS: 0 when a line matches
  local i
  for ((i = 0; i < $3 * 20; i++)); do grep -qE "$2" "$1" 2> /dev/null && return 0; sleep 0.05; done
  return 1
}

echo "== gshare MPS check ($(date -u +%FT%TZ)) =="
timeout 30 "$NVIDIA_SMI" -i "$DEV" --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/GPU: /'
echo "settings before: compute_mode,persistence_mode = $BEFORE"
[[ -S /tmp/nvidia-mps/control ]] && echo "note: a system MPS daemon listens in /tmp/nvidia-mps (left alone; this check uses its own)"

# --- the private MPS control daemon -------------------------------------------------------------
if ! "${MPS[@]}" timeout 30 nvidia-cuda-mps-control -d > "$L/mps-start.txt" 2>&1; then
  echo "mps-check: setup: starting the private MPS daemon failed: $(tail -3 "$L/mps-start.txt")"
  exit 2
fi
DAEMON=1
wait_file "$PIPE/control" 10 || { echo "mps-check: setup: no control pipe in $PIPE after 10 s"; exit 2; }
echo "private MPS daemon up: CUDA_MPS_PIPE_DIRECTORY=$PIPE"

# --- 1. MPS_ENABLED --------------------------------------------------------------------------------
SMS=0
if want 1 || want 2 || want 4; then
  a=$("${MPS[@]}" timeout 60 python3 "$PROBE" --device "$DEV" info 2>&1 || true); echo "$a" > "$L/info-mps.txt"
  b=$(CUDA_MPS_PIPE_DIRECTORY=$EMPTY probe info 2>&1 || true); echo "$b" > "$L/info-no-daemon.txt"
  SMS=$(kv "$a" sms); SMS=${SMS:-0}
  echo "mps-check: check=info name=$(kv "$a" name) sms=$SMS total_bytes=$(kv "$a" total_bytes) driver_cuda=$(kv "$a" driver_cuda) checkpoint_api=$(kv "$a" checkpoint_api)" >> "$O/results.txt"
  if want 1; then
    if [[ $(kv "$a" mps_enabled) == 1 && $(kv "$b" mps_enabled) == 0 ]]; then
      report PASS mps_enabled "with the private daemon 1, with a pipe dir without a daemon 0 (fails open)" with_daemon=1 without_daemon=0
    else
      report FAIL mps_enabled "with the daemon '$(kv "$a" mps_enabled)' ($(tail -1 <<< "$a")), without '$(kv "$b" mps_enabled)' ($(tail -1 <<< "$b"))" \
        with_daemon="$(kv "$a" mps_enabled)" without_daemon="$(kv "$b" mps_enabled)"
    fi
  fi
fi

# --- 2. pair slowdowns -----------------------------------------------------------------------------
declare -A BASE=()
run_group() {  # TAG SHARE KIND [KIND]: the kinds at once at SHARE%; sets RATES (kind order)
  local tag=$1 share=$2; shift 2
  local i k go=$W/go-$tag pids=()
  RATES=()
  rm -f "$go"
  i=0
  for k in "$@"; do
    local param=0; [[ $k == fma ]] && param=$FMA_ITERS
    "${MPS[@]}" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$share" timeout $((60 + ${SECS%.*} * 2)) python3 "$PROBE" --device "$DEV" \
      run --kind "$k" --param "$param" --go "$go" --seconds "$SECS" > "$L/pair-$tag-$i.out" 2>&1 &
    pids+=($!); PIDS+=($!)
    i=$((i + 1))
  done
  for ((i = 0; i < $#; i++)); do
    wait_line "$L/pair-$tag-$i.out" '^(ready|error)' 60 || true
  done
  python3 -c 'import time; print(time.time() + 0.3)' > "$go.tmp" && mv "$go.tmp" "$go"
  for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
  for ((i = 0; i < $#; i++)); do
    RATES+=("$(kv "$(grep '^kind=' "$L/pair-$tag-$i.out" || true)" rate)")
  done
}
slow() { python3 -c "import sys; b, r = float(sys.argv[1]), float(sys.argv[2]); print(f'{b / r:.4f}')" "$1" "$2" 2> /dev/null || echo ""; }
if want 2; then
  c=$("${MPS[@]}" timeout 90 python3 "$PROBE" --device "$DEV" calibrate --target-ms 2 2>&1 || true); echo "$c" > "$L/calibrate.txt"
  FMA_ITERS=$(kv "$c" fma_iters)
  if [[ -z $FMA_ITERS ]]; then
    report FAIL pairs "calibration failed: $(tail -2 <<< "$c" | tr '\n' ' ')" step=calibrate
  else
    echo "mps-check: check=calibrate fma_iters=$FMA_ITERS fma_ms=$(kv "$c" fma_ms) fma_tflops=$(kv "$c" fma_tflops) copy_ms=$(kv "$c" copy_ms) copy_gbps=$(kv "$c" copy_gbps) sms=$(kv "$c" sms)" | tee -a "$O/results.txt"
    bad=0 table=""
    for s in "${SHARE_LIST[@]}"; do
      for k in fma copy; do
        run_group "$k-$s" "$s" "$k"
        r=${RATES[0]}
        if [[ -z $r ]]; then bad=1; echo "      $k alone at $s%: no result: $(tail -1 "$L/pair-$k-$s-0.out")"; continue; fi
        [[ $s == 100 ]] && BASE[$k]=$r
        sd=$(slow "${BASE[$k]:-}" "$r")
        echo "mps-check: check=pair kind=$k share=$s with=none rate=$r slowdown=$sd" >> "$O/results.txt"
        table+="$k@$s=${sd} "
      done
      for pair in "fma fma" "copy copy" "fma copy"; do
        read -r k1 k2 <<< "$pair"
        run_group "$k1-$k2-$s" "$s" "$k1" "$k2"
        for i in 0 1; do
          k=$([[ $i == 0 ]] && echo "$k1" || echo "$k2"); o=$([[ $i == 0 ]] && echo "$k2" || echo "$k1")
          r=${RATES[$i]:-}
          if [[ -z $r ]]; then bad=1; echo "      $k with $o at $s%: no result: $(tail -1 "$L/pair-$k1-$k2-$s-$i.out")"; continue; fi
          sd=$(slow "${BASE[$k]:-}" "$r")
          echo "mps-check: check=pair kind=$k share=$s with=$o rate=$r slowdown=$sd" >> "$O/results.txt"
          table+="$k+$o@$s=${sd} "
        done
      done
    done
    grep -h 'mps_enabled=0' "$L"/pair-*.out > /dev/null 2>&1 && { bad=1; echo "      a pair client ran WITHOUT MPS (mps_enabled=0)"; }
    if ((bad)); then report FAIL pairs "some configurations gave no result (logs/pair-*.out): $table" shares="${SHARE_LIST[*]// /,}"
    else report PASS pairs "slowdowns vs alone at 100%: $table" shares="${SHARE_LIST[*]// /,}"; fi
  fi
fi

# --- 3. the client limit -----------------------------------------------------------------------------
if want 3; then
  n=0 err=""
  for ((i = 1; i <= MAX_CLIENTS; i++)); do
    "${MPS[@]}" timeout 300 python3 "$PROBE" --device "$DEV" hold --seconds 240 > "$L/client-$i.out" 2>&1 &
    PIDS+=($!)
    if ! wait_line "$L/client-$i.out" '^(ok|error)' 20; then
      err="client $i gave no answer in 20 s ($(tail -1 "$L/client-$i.out"))"; break
    fi
    if grep -q '^error' "$L/client-$i.out"; then err=$(grep -m1 '^error' "$L/client-$i.out"); break; fi
    n=$i
  done
  stop_children
  if ((n == 0)); then
    report FAIL client_limit "not even one client started: $err" client_limit=0 error="${err// /_}"
  elif [[ -n $err ]]; then
    report PASS client_limit "$n clients ran; client $((n + 1)): $err" client_limit=$n error="${err// /_}"
  else
    report PASS client_limit "all $MAX_CLIENTS clients ran (limit not reached)" client_limit_at_least="$MAX_CLIENTS"
  fi
fi

# --- 4. context memory vs share -----------------------------------------------------------------------
if want 4; then
  bad=0 table=""
  for s in "${SHARE_LIST[@]}"; do
    used=()
    for i in 1 2 3; do
      "${MPS[@]}" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$s" timeout 120 python3 "$PROBE" --device "$DEV" hold --seconds 90 > "$L/ctxmem-$s-$i.out" 2>&1 &
      PIDS+=($!)
      wait_line "$L/ctxmem-$s-$i.out" '^(ok|error)' 20 || true
      used+=("$(kv "$(cat "$L/ctxmem-$s-$i.out")" used_bytes)")
    done
    stop_children
    if [[ -z ${used[0]} || -z ${used[2]} ]]; then bad=1; table+="$s%=? "; continue; fi
    per=$(((used[2] - used[0]) / 2))
    mib=$(python3 -c "print(f'{$per / 1048576:.1f}')")
    extra=""
    if [[ $s == 100 && $SMS -gt 0 ]]; then
      extra="context_mib_per_sm=$(python3 -c "print(f'{$per / 1048576 / $SMS:.3f}')")"
    fi
    echo "mps-check: check=context_memory share=$s bytes_per_client=$per used_bytes=${used[*]// /,} $extra" | tee -a "$O/results.txt"
    table+="$s%=${mib}MiB "
  done
  if ((bad)); then report FAIL context_memory "a client gave no cuMemGetInfo (logs/ctxmem-*.out): $table"
  else report PASS context_memory "device memory per client (cuMemGetInfo): $table"; fi
fi

# --- 5. VMM remap under MPS ---------------------------------------------------------------------------
if want 5; then
  v=$(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "${MPS[@]}" timeout 60 python3 "$PROBE" --device "$DEV" vmm 2>&1 || true); echo "$v" > "$L/vmm.txt"
  if [[ $(kv "$v" vmm) == works && $(kv "$v" mps_enabled) == 1 ]]; then
    report PASS vmm "unmap + map at the same address works for an MPS client (same and new physical memory)" vmm=works
  else
    report FAIL vmm "$(tr '\n' ' ' <<< "$v")" vmm="$(kv "$v" vmm)" mps_enabled="$(kv "$v" mps_enabled)" error="$(kv "$v" error)" step="$(kv "$v" step)"
  fi
fi

# --- 6. the checkpoint API on an MPS client, from a second process ------------------------------------------
ckpt_one() {  # TAG [env...]: sets CK (the driver's output) and VF (the target's verify line)
  local tag=$1; shift
  mkfifo "$W/ck-$tag.in"
  env "$@" timeout 120 python3 "$PROBE" --device "$DEV" ckpt-target < "$W/ck-$tag.in" > "$L/ckpt-target-$tag.out" 2>&1 &
  local tp=$!; PIDS+=("$tp")
  exec 8> "$W/ck-$tag.in"
  CK="" VF=""
  if wait_line "$L/ckpt-target-$tag.out" '^(ready|error)' 60 && grep -q '^ready' "$L/ckpt-target-$tag.out"; then
    local pid; pid=$(kv "$(grep '^ready' "$L/ckpt-target-$tag.out")" pid)
    CK=$(PROBE_LIMIT=90 probe ckpt --pid "$pid" 2>&1 || true)
    echo verify >&8
    wait_line "$L/ckpt-target-$tag.out" '^verified' 60 || true
    VF=$(grep -m1 '^verified' "$L/ckpt-target-$tag.out" || echo "no verify answer: $(tail -1 "$L/ckpt-target-$tag.out")")
  else
    CK="target did not start: $(tail -1 "$L/ckpt-target-$tag.out")"
  fi
  echo "$CK" > "$L/ckpt-$tag.txt"
  exec 8>&-
  stop_children
}
if want 6; then
  ckpt_one mps CUDA_MPS_PIPE_DIRECTORY="$PIPE" CUDA_MPS_LOG_DIRECTORY="$LOGD"
  CK_MPS=$CK VF_MPS=$VF
  ckpt_one plain CUDA_MPS_PIPE_DIRECTORY="$EMPTY"
  echo "mps-check: check=checkpoint_control client=non-mps checkpoint=$(kv "$CK" checkpoint) states=$(kv "$CK" states) verified_bad=$(kv "$VF" bad) error=$(kv "$CK" error)" | tee -a "$O/results.txt"
  if [[ $(grep -c 'mps_enabled=1' "$L/ckpt-target-mps.out" 2> /dev/null) == 0 ]]; then
    report FAIL checkpoint "the target did not come up as an MPS client: $(head -1 "$L/ckpt-target-mps.out")" checkpoint=untested
  elif [[ $(kv "$CK_MPS" checkpoint) == works && $(kv "$VF_MPS" bad) == 0 ]]; then
    read -r -a times <<< "$(grep -o '[a-z]*_ms=[0-9.]*' <<< "$CK_MPS" | tr '\n' ' ')"
    report PASS checkpoint "lock/checkpoint/restore/unlock of an MPS client works, contents intact ($(kv "$CK_MPS" states))" checkpoint=works \
      states="$(kv "$CK_MPS" states)" "${times[@]}"
  else
    report FAIL checkpoint "MPS client: $(tr '\n' ' ' <<< "$CK_MPS"); after: $VF_MPS (non-MPS control: $(kv "$CK" checkpoint))" \
      checkpoint=fails error="$(kv "$CK_MPS" error)" step="$(kv "$CK_MPS" step)" states="$(kv "$CK_MPS" states)" verified="$(tr ' ' '_' <<< "$VF_MPS")"
  fi
fi

# --- 7. co-run demo through gshare-arbiter ---------------------------------------------------------------------
if want 7; then
  ARB=$B/bin/gshare-arbiter SHIM=$B/lib/libgshare.so CNN=$B/bin/sample-cnn LG=$B/bin/gshare-loadgen
  missing=""
  for f in "$ARB" "$SHIM" "$CNN" "$LG"; do [[ -e $f ]] || missing+=" $f"; done
  [[ -d "$B/deps" ]] && export LD_LIBRARY_PATH="$B/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  help=""
  [[ -z $missing ]] && help=$(timeout 20 "$ARB" --help 2>&1 || true)
  if [[ -n $missing ]]; then
    report SKIP corun_demo "gshare not built here (missing:$missing); build it or pass --build DIR"
  elif ! grep -qiE 'corun[-_]gpus' <<< "$help" || ! grep -qiE 'mps[-_]control' <<< "$help"; then
    report SKIP corun_demo "$ARB --help names no corun-gpus / mps-control setting (co-running not in this build)"
  else
    # The arbiter runs its own MPS daemon for the co-run GPU (--mps-control, one per GPU of
    # --corun-gpus, pipe directory --mps-dir/gpu<ordinal>/pipe): ours goes first.
    stop_daemon
    AMPS=$W/arb-mps
    APIPE=$AMPS/gpu$DEV/pipe
    mkdir -p "$AMPS"
    grep -iE 'corun|mps' <<< "$help" > "$L/corun-arbiter-help.txt" || true
    timeout 120 "$ARB" --socket "$W/arb.sock" --gpus "$DEV" --summary "$W/arb.json" --policy aggressive \
      --corun-gpus "$DEV" --mps-control nvidia-cuda-mps-control --mps-dir "$AMPS" \
      --log-level info > "$L/corun-arbiter.log" 2>&1 &
    AP=$!; PIDS+=("$AP")
    wait_file "$W/arb.sock" 10 || true
    # The servers must find the daemon at cuInit, or they run time-sliced (fail-open).
    wait_file "$APIPE/control" 20 || true
    targets=() started=0
    for i in 0 1; do
      # MPS clients of the arbiter's daemon at a 50% share; the demand of the catalog's resnet50
      # (docs/workloads.md): without GSHARE_CORUN_DEMAND a function never co-runs.
      env LD_PRELOAD="$SHIM" GSHARE_ARBITER_SOCKET="$W/arb.sock" GSHARE_FUNCTION="cnn-$i" GSHARE_SLO_MS=1000 \
        GSHARE_VGPU_MEMORY=256MiB GSHARE_LOG_FILE="$L/corun-cnn-$i.shim.log" \
        CUDA_MPS_PIPE_DIRECTORY="$APIPE" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 \
        GSHARE_CORUN_DEMAND=compute=30,bandwidth=15 \
        timeout 100 "$CNN" --port 0 --name "cnn-$i" > "$L/corun-cnn-$i.out" 2> "$L/corun-cnn-$i.err" &
      PIDS+=($!)
      if wait_line "$L/corun-cnn-$i.out" '^READY' 60; then
        targets+=(--target "cnn-$i=http://127.0.0.1:$(sed -n 's/^PORT=//p' "$L/corun-cnn-$i.out")/v2/models/cnn-$i@1000")
        started=$((started + 1))
      fi
    done
    lg=bad
    # Requests must overlap for the GPU to be asked for while the other holds it: at 40 req/s
    # (evenly spaced, 25 ms apart, 3 ms each) they never did on the H200 (corun_joins=0,
    # 2026-12-04). Poisson arrivals at 300 req/s keep each server about half busy.
    ((started == 2)) && timeout 60 "$LG" "${targets[@]}" --rate 300 --poisson --duration 8 \
      > "$L/corun-loadgen.txt" 2>&1 && lg=ok
    kill -TERM "$AP" 2> /dev/null || true
    for _ in $(seq 100); do kill -0 "$AP" 2> /dev/null || break; sleep 0.1; done
    stop_children
    cp "$W/arb.json" "$L/corun-arbiter-summary.json" 2> /dev/null || true
    # The summary's co-run counters: corun_joins (co-run grants), corun_refusals, corun_revocations.
    corun=$(python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
print(' '.join(f'{k}={j.get(k, 0)}' for k in ('corun_joins', 'corun_refusals', 'corun_revocations')))" \
      "$W/arb.json" 2> /dev/null || true)
    grants=$(grep -oE '\bcorun_joins=[0-9]+' <<< "$corun" | cut -d= -f2)
    if [[ $lg == ok && ${grants:-0} -gt 0 ]]; then
      # shellcheck disable=SC2086  # $corun: key=value words
      report PASS corun_demo "two sample-cnn co-ran: $(grep -E '^ *all' "$L/corun-loadgen.txt" | tr -s ' '); $corun" corun_grants="$grants" $corun
    else
      report FAIL corun_demo "servers started $started/2, loadgen $lg, co-run counters '${corun:-none in the summary}' (logs/corun-*)" corun_grants="${grants:-0}"
    fi
  fi
fi

# --- 8. the daemon's client list (what gshare-arbiter asks before it believes a share) -------------------
if want 8; then
  stop_children
  ctl() { echo "$1" | "${MPS[@]}" timeout 20 nvidia-cuda-mps-control 2>&1; }
  "${MPS[@]}" timeout 60 python3 "$PROBE" --device "$DEV" hold --seconds 30 > "$L/client-list-hold.out" 2>&1 &
  PIDS+=($!)
  if wait_line "$L/client-list-hold.out" '^(ok|error)' 30 && grep -q '^ok' "$L/client-list-hold.out"; then
    held=$(kv "$(cat "$L/client-list-hold.out")" pid)
    servers=$(ctl get_server_list); listed=""
    for s in $servers; do
      [[ $s =~ ^[0-9]+$ ]] || continue
      clients=$(ctl "get_client_list $s")
      grep -qw "$held" <<< "$clients" && listed=$s
    done
    echo "servers: $servers" > "$L/client-list.txt"
    if [[ -n $listed ]]; then
      report PASS client_list "the hold client (pid $held) is listed by server $listed (get_client_list)" client_pid="$held" server="$listed"
    else
      report FAIL client_list "the hold client (pid $held) is in no server's get_client_list (servers: ${servers:-none}; logs/client-list.txt): gshare-arbiter would never believe an MPS share here" client_pid="$held"
    fi
  else
    report FAIL client_list "the hold client did not start: $(tail -1 "$L/client-list-hold.out")"
  fi
  stop_children
fi

# --- simulator parameters ------------------------------------------------------------------------------
stop_children
echo
if ! timeout 120 python3 "$PROBE" fit --results "$O/results.txt" > "$O/simulator-params.txt" 2>&1; then
  echo "FAIL  fit: $(tail -2 "$O/simulator-params.txt")"; FAILED=1
fi
cat "$O/simulator-params.txt"
grep '^mps-check: ' "$O/simulator-params.txt" >> "$O/results.txt" || true
