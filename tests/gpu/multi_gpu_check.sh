#!/usr/bin/env bash
# Multi-GPU checks on a REAL node (docs/multi-gpu.md, "What a GPU session must check"); run by
# tests/gpu/full-check.sh when the host has two GPUs or more. Needs >= 2 GPUs of one
# chip type, the real driver, and a build with preload_probe and gshare-arbiter (B=build dir).
#   1. device view: preload_probe devices <way> under the shim with GSHARE_DEVICE=1 — one
#      device, GPU 1, context and allocation on GPU 1, kernel and copies correct (four ways)
#   2. placement + moves: four swap probes with quotas of 60% of a GPU under gshare-arbiter on
#      two GPUs take turns three rounds; after every turn each probe's data and kernel checksums
#      must be intact and its context, allocation and primary contexts on one GPU; the arbiter
#      must have moved contexts (context_moves > 0), and its "contexts moved ... in T us" lines
#      give the cost of a move (printed: put it in the policy's restore_overhead)
#   3. while a probe runs, nvidia-smi lists its pid on exactly one GPU
# Usage: tests/gpu/multi_gpu_check.sh [BUILD_DIR]   (default build-gpu)
# Exit: 0 all passed, 1 a check failed, 2 refused (fewer than 2 GPUs or simcuda on the path).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build-gpu}
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [[ "$GPUS" -lt 2 ]]; then echo "REFUSED: needs 2 GPUs, found ${GPUS:-0}"; exit 2; fi
if [[ "${LD_LIBRARY_PATH:-}" == *simcuda-lib* ]]; then echo "REFUSED: simcuda on LD_LIBRARY_PATH"; exit 2; fi
PROBE=$B/bin/preload_probe SHIM=$B/lib/libgshare.so ARB=$B/bin/gshare-arbiter
for f in "$PROBE" "$SHIM" "$ARB"; do [[ -e "$f" ]] || { echo "REFUSED: $f missing"; exit 2; }; done
W=$(mktemp -d "/tmp/gshare-multigpu-$$-XXXX")
FAILED=0
pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; FAILED=1; }

# 1. Device view.
for way in linked dlsym procaddr procaddr-ptds; do
  out=$(LD_PRELOAD=$SHIM GSHARE_DEVICE=1 GSHARE_VGPU_MEMORY=2GiB "$PROBE" devices "$way" 2>&1)
  want="count=1 device=1 device1=101 ctx_device=1 ptr_ordinal=1 kernel=0 sync=0 result_ok=1"
  got=""
  for k in count device device1 ctx_device ptr_ordinal kernel sync result_ok; do
    got+="$k=$(sed -n "s/^$k=//p" <<<"$out" | head -1) "
  done
  [[ "${got% }" == "$want" ]] && pass "device view ($way)" || fail "device view ($way): $got"
done

# 2. Placement and moves under the arbiter.
MEM_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | sort -n | head -1)
QUOTA=$((MEM_MIB * 6 / 10))MiB
"$ARB" --socket "$W/arb.sock" --slice 5ms --summary "$W/summary.json" --log-level debug \
  >"$W/arbiter.log" 2>&1 &
ARB_PID=$!
for _ in $(seq 100); do [[ -S "$W/arb.sock" ]] && break; sleep 0.1; done
declare -a IN OUT PIDS
for i in 0 1 2 3; do
  mkfifo "$W/in$i"
  LD_PRELOAD=$SHIM GSHARE_ARBITER_SOCKET=$W/arb.sock GSHARE_VGPU_MEMORY=$QUOTA GSHARE_FUNCTION=m$i \
    GSHARE_LOG_LEVEL=info GSHARE_LOG_FILE=$W/m$i.log \
    "$PROBE" swap $((7 + i)) 10 256 <"$W/in$i" >"$W/out$i" 2>"$W/err$i" &
  PIDS[$i]=$!
  exec {fd}>"$W/in$i"
  IN[$i]=$fd
done
wait_for() {  # file, pattern, count: waits until the file has that many matching lines
  for _ in $(seq 600); do [[ $(grep -c "$2" "$1" 2>/dev/null) -ge $3 ]] && return 0; sleep 0.1; done
  return 1
}
for i in 0 1 2 3; do wait_for "$W/out$i" '^ready' 1 || fail "probe $i not ready: $(cat "$W/err$i")"; done
sleep 1
nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader >"$W/smi.txt" 2>/dev/null
for i in 0 1 2 3; do
  n=$(grep -c "^${PIDS[$i]}," "$W/smi.txt")
  [[ "$n" -le 1 ]] && pass "probe $i on at most one GPU in nvidia-smi ($n)" || fail "probe $i on $n GPUs"
done
turn=0
for round in 1 2 3; do
  for i in 0 1 2 3; do
    turn=$((turn + 1))
    echo verify >&"${IN[$i]}"; echo where >&"${IN[$i]}"
    wait_for "$W/out$i" '^where ' "$round" || { fail "probe $i turn $round: no answer"; continue; }
    v=$(grep '^verified' "$W/out$i" | sed -n "${round}p"); w=$(grep '^where ' "$W/out$i" | sed -n "${round}p")
    [[ "$v" == *" bad=0 kernel_bad=0"* ]] || fail "probe $i round $round: $v"
    read -r c n p pr < <(sed -E 's/.*ctx_device=(-?[0-9]+) count=(-?[0-9]+) ptr_ordinal=(-?[0-9]+) primary=([0-9]+).*/\1 \2 \3 \4/' <<<"$w")
    if [[ "$n" == 1 && "$c" == "$p" && "$pr" == $((1 << c)) ]]; then :; else fail "probe $i round $round: $w"; fi
  done
done
for i in 0 1 2 3; do echo quit >&"${IN[$i]}"; done
for i in 0 1 2 3; do wait "${PIDS[$i]}" || fail "probe $i exited $?"; done
kill -TERM "$ARB_PID"; wait "$ARB_PID"
moves=$(python3 -c "import json;print(json.load(open('$W/summary.json')).get('context_moves',0))" 2>/dev/null)
[[ "${moves:-0}" -gt 0 ]] && pass "context moves: $moves" || fail "no context move (see $W/arbiter.log)"
grep -o 'contexts moved from GPU [0-9]* to GPU [0-9]* in [0-9]* us' "$W/arbiter.log" | head -20
grep -q ILLEGAL_ADDRESS "$W"/m*.log "$W"/err* && fail "ILLEGAL_ADDRESS seen"
echo "logs: $W"
exit $FAILED
