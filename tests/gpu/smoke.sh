#!/usr/bin/env bash
# GPU smoke test: on a machine with an NVIDIA GPU, builds what it needs, runs the shim's unit
# tests and then the shim, the arbiter and the samples against the REAL driver, and prints a
# short report. Checks (each prints PASS/FAIL):
#   1. shim unit tests (preload_unit_test, preload_memory_unit_test)
#   2. the three samples without the shim: every answer correct (gshare-loadgen's digest and
#      consistency checks)
#   3. the same samples under libgshare.so with quotas; sample-llm swapped out and back in
#      through the shim's control socket in the middle of a load run: answers after the swap
#      must equal those before it (consistency = checksums of the outputs)
#   4. swap out/in with checksums of device memory (preload_probe swap: 40 random blocks plus a
#      512 MiB block, verified on the host and by a kernel after each swap); swap throughput
#   5. quota: cuMemGetInfo/cuDeviceTotalMem show the quota, allocation beyond it is refused;
#      sample-cnn with a 32 MiB quota exits 1 with CUDA_ERROR_OUT_OF_MEMORY
#   6. cuGetProcAddress_v2 paths: the probe reaches the driver linked, through dlsym and through
#      cuGetProcAddress_v2 (also the per-thread-stream variants) and lands in the shim
#   7. hand-off between two processes through gshare-arbiter (told the GPU has 200 MiB, so two
#      128 MiB vGPUs must take turns and swap): every answer correct, the arbiter swapped
#   8. where PyTorch is installed: an unmodified PyTorch inference under the shim
#      (tests/gpu/torch_probe.py): the quota seen by torch, torch's OutOfMemoryError beyond it,
#      outputs bit-identical after the vGPU was swapped out and back in
# GSHARE_SMOKE_LOGS=DIR copies the logs there at the end (as smoke-logs.tar.gz).
# Must finish in under 8 minutes. Without a GPU it refuses (exit 2) and changes nothing.
# Usage: tests/gpu/smoke.sh [BUILD_DIR]      (default: build-gpu; jobs: $GSHARE_JOBS or nproc)
#        GSHARE_SMOKE_PREBUILT=1 tests/gpu/smoke.sh DIR   uses DIR/bin, DIR/lib (and DIR/deps for
#        shared libraries) as they are, without building (a GPU host without the build deps).
# Exit status: 0 all checks passed, 1 a check failed, 2 refused (no GPU) or the build failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build-gpu}
T0=$SECONDS

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "tests/gpu/smoke.sh: REFUSED: no NVIDIA GPU here (nvidia-smi missing or 'nvidia-smi -L' failed)."
  echo "This test needs a real GPU and driver; on machines without one use the simcuda tests (ctest)."
  exit 2
fi
if [[ -n "${LD_LIBRARY_PATH:-}" && "$LD_LIBRARY_PATH" == *simcuda-lib* ]]; then
  echo "tests/gpu/smoke.sh: REFUSED: LD_LIBRARY_PATH points at simcuda ($LD_LIBRARY_PATH); unset it."
  exit 2
fi

W=$(mktemp -d "/tmp/gshare-gpu-smoke-$$-XXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
}
save_logs() {
  cleanup
  [[ -n "${GSHARE_SMOKE_LOGS:-}" ]] && mkdir -p "$GSHARE_SMOKE_LOGS" &&
    tar -C "$W" -czf "$GSHARE_SMOKE_LOGS/smoke-logs.tar.gz" --exclude='*.in' --exclude='*.sock' . 2>/dev/null
}
trap save_logs EXIT
FAILED=0
pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; FAILED=1; }
# One request to a shim control socket (python3: no socat needed).
ctl() {
  python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(120)
s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode())
print(s.makefile().readline().strip())
PY
}
wait_for() {  # FILE PATTERN SECONDS
  for _ in $(seq $((${3} * 10))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
port_of() { sed -n 's/^PORT=//p' "$1"; }
kv() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<< "$1" | head -1; }

echo "== gshare GPU smoke test ($(date -u +%FT%TZ)) =="
nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current \
  --format=csv,noheader | sed 's/^/GPU: /'

# The real driver: found by the loader, else in the usual driver directories.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
  for d in /usr/local/nvidia/lib64 /usr/lib64 /usr/lib/x86_64-linux-gnu /usr/local/cuda/compat; do
    if [[ -e "$d/libcuda.so.1" ]]; then export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; break; fi
  done
fi

# --- build ------------------------------------------------------------------------------------
if [[ "${GSHARE_SMOKE_PREBUILT:-0}" == 1 ]]; then
  echo "using the prebuilt binaries in $B (no build)"
  # The unit tests' build-tree checks do not apply here; the hook table is checked against the
  # real driver's exports instead of the toolkit's stub.
  export GSHARE_TEST_PREBUILT=1 GSHARE_TEST_DRIVER_LIBRARY=libcuda.so.1
  HOST_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  [[ -d "$B/deps" ]] && export LD_LIBRARY_PATH="$B/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
echo "building in $B ..."
if ! { [[ -f "$B/build.ninja" ]] || cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DGSHARE_BUILD_BENCH=OFF > "$W/cmake.log" 2>&1; } ||
   ! cmake --build "$B" -j"${GSHARE_JOBS:-$(nproc)}" --target gshare_preload gshare-arbiter \
       gshare-loadgen sample-cnn sample-bert sample-llm preload_probe preload_unit_test \
       preload_memory_unit_test > "$W/build.log" 2>&1; then
  echo "build failed:"; tail -20 "$W/cmake.log" "$W/build.log" 2>/dev/null
  exit 2
fi
echo "built in $((SECONDS - T0)) s"
fi
echo "driver: $(LD_PRELOAD= python3 -c "import ctypes;l=ctypes.CDLL('libcuda.so.1');v=ctypes.c_int();l.cuDriverGetVersion(ctypes.byref(v));print('libcuda.so.1, CUDA', v.value)" 2>&1)"
SHIM=$B/lib/libgshare.so

# --- 1. shim unit tests -------------------------------------------------------------------------
for t in preload_unit_test preload_memory_unit_test; do
  # Line-buffered, so a test that hangs shows in the log as the last "[ RUN ]" line.
  if timeout 150 stdbuf -oL "$B/bin/$t" > "$W/$t.log" 2>&1; then pass "1 $t ($(grep -o '[0-9]* tests\? from' "$W/$t.log" | tail -1 | cut -d' ' -f1) tests)"
  else fail "1 $t (exit $?): $(grep -m3 FAILED "$W/$t.log")"; tail -15 "$W/$t.log" | sed 's/^/      /'; fi
done

# --- 2. samples without the shim ----------------------------------------------------------------
start_sample() {  # KIND NAME LOGBASE [env...]  -> sets SPID, SPORT
  local kind=$1 name=$2 log=$3; shift 3
  env "$@" "$B/bin/sample-$kind" --port 0 --name "$name" > "$log.out" 2> "$log.err" &
  SPID=$!; PIDS+=("$SPID")
  wait_for "$log.out" '^READY' 120 || { SPORT=""; return 1; }
  SPORT=$(port_of "$log.out")
}
targets=()
for k in cnn bert llm; do
  if start_sample $k $k "$W/plain-$k"; then targets+=(--target "$k=http://127.0.0.1:$SPORT/v2/models/$k@5000")
  else fail "2 sample-$k did not start: $(tail -2 "$W/plain-$k.err")"; fi
done
if timeout 120 "$B/bin/gshare-loadgen" "${targets[@]}" --rate 30 --duration 5 --json "$W/plain.json" > "$W/plain.lg" 2>&1; then
  pass "2 samples on the real driver: $(grep -E '^ *all' "$W/plain.lg" | tr -s ' ')"
else fail "2 samples on the real driver: $(tail -3 "$W/plain.lg")"; fi
cleanup; PIDS=()

# --- 3. samples under the shim; sample-llm swapped mid-run ---------------------------------------
targets=()
declare -A quota=([cnn]=96MiB [bert]=320MiB [llm]=1152MiB)
for k in cnn bert llm; do
  if start_sample $k $k "$W/shim-$k" LD_PRELOAD="$SHIM" GSHARE_VGPU_MEMORY=${quota[$k]} \
       GSHARE_CONTROL_SOCKET="$W/ctl-$k.sock" GSHARE_LOG_FILE="$W/shim-$k.shim.log"; then
    targets+=(--target "$k=http://127.0.0.1:$SPORT/v2/models/$k@5000")
  else fail "3 sample-$k under the shim did not start: $(tail -2 "$W/shim-$k.err")"; fi
done
"$B/bin/gshare-loadgen" "${targets[@]}" --rate 20 --duration 8 --variants 4 --json "$W/shim.json" > "$W/shim.lg" 2>&1 &
LG=$!
sleep 2.5
# Staging pinned ahead of time, as an idle function under an arbiter does by itself.
echo "      llm prepare:  $(ctl "$W/ctl-llm.sock" prepare)"
out=$(ctl "$W/ctl-llm.sock" swap-out); echo "      llm swap-out: $out"
sleep 2
inn=$(ctl "$W/ctl-llm.sock" "swap-in 0"); echo "      llm swap-in:  $inn"
if wait $LG; then pass "3 samples under the shim, llm swapped out and in mid-run, answers unchanged: $(grep -E '^ *all' "$W/shim.lg" | tr -s ' ')"
else fail "3 under the shim: $(tail -4 "$W/shim.lg")"; fi
stats=$(ctl "$W/ctl-llm.sock" stats)
[[ $(kv "$stats" swap_outs) -ge 1 ]] && pass "3 llm stats: $stats" || fail "3 llm stats: $stats"
LLM_OUT_BYTES=$(kv "$out" bytes); LLM_OUT_NS=$(kv "$out" elapsed_ns); LLM_OUT_COPY=$(kv "$out" copy_ns)
LLM_IN_BYTES=$(kv "$inn" bytes); LLM_IN_NS=$(kv "$inn" elapsed_ns)
cleanup; PIDS=()

# --- 4. probe: device memory checksums across swaps ----------------------------------------------
mkfifo "$W/probe.in"
LD_PRELOAD="$SHIM" GSHARE_VGPU_MEMORY=2GiB GSHARE_CONTROL_SOCKET="$W/probe.sock" \
  "$B/bin/preload_probe" swap 7 40 512 < "$W/probe.in" > "$W/probe.out" 2> "$W/probe.err" &
PP=$!; PIDS+=("$PP")
exec 7> "$W/probe.in"
if wait_for "$W/probe.out" '^end' 120; then
  p_out=$(ctl "$W/probe.sock" swap-out)
  echo verify >&7
  wait_for "$W/probe.out" '^verified' 120
  p_out2=$(ctl "$W/probe.sock" swap-out)
  p_in=$(ctl "$W/probe.sock" "swap-in 0")
  echo verify >&7
  for _ in $(seq 1200); do [[ $(grep -c '^verified' "$W/probe.out") -ge 2 ]] && break; sleep 0.1; done
  echo quit >&7
  v=$(grep '^verified' "$W/probe.out" | tr '\n' ';')
  if [[ $(grep -c '^verified .* bad=0 kernel_bad=0' "$W/probe.out") == 2 && $p_out == ok* && $p_in == ok* ]]; then
    pass "4 probe: $(sed -n 's/^ready //p' "$W/probe.out"); after automatic and explicit swap-in: $v"
  else fail "4 probe: swap-out '$p_out' / '$p_out2', swap-in '$p_in', $v $(tail -2 "$W/probe.err")"; fi
else fail "4 probe did not get ready: $(tail -3 "$W/probe.err")"; fi
exec 7>&-
wait "$PP" 2>/dev/null
PIDS=()

# --- 5. quota -------------------------------------------------------------------------------------
q=$(LD_PRELOAD="$SHIM" GSHARE_VGPU_MEMORY=1GiB timeout 120 "$B/bin/preload_probe" totals linked 64 2>&1)
if [[ $(kv "$q" total) == 1073741824 && $(kv "$q" refusal) == 2 && $(kv "$q" free_monotonic) == 1 ]]; then
  pass "5 quota 1 GiB: total=$(kv "$q" total) allocations=$(kv "$q" allocations) refusal=CUDA_ERROR_OUT_OF_MEMORY"
else fail "5 quota: $(tr '\n' ' ' <<< "$q")"; fi
LD_PRELOAD="$SHIM" GSHARE_VGPU_MEMORY=32MiB timeout 120 "$B/bin/sample-cnn" --port 0 > "$W/oom.out" 2> "$W/oom.err"
rc=$?
if [[ $rc == 1 ]] && grep -q CUDA_ERROR_OUT_OF_MEMORY "$W/oom.err"; then pass "5 sample-cnn over its 32 MiB quota exits 1 with CUDA_ERROR_OUT_OF_MEMORY"
else fail "5 sample-cnn with 32 MiB: exit $rc, $(tail -1 "$W/oom.err")"; fi

# --- 6. cuGetProcAddress_v2 paths -----------------------------------------------------------------
ok6=1
for how in linked dlsym procaddr procaddr-ptds; do
  r=$(LD_PRELOAD="$SHIM" GSHARE_VGPU_MEMORY=256MiB timeout 120 "$B/bin/preload_probe" totals $how 64 2>&1)
  if [[ $(kv "$r" total) == 268435456 && "$(kv "$r" mem_alloc_fn)" == *gshare* ]]; then :; else ok6=0; echo "      $how: $(tr '\n' ' ' <<< "$r")"; fi
done
l=$(LD_PRELOAD="$SHIM" timeout 60 "$B/bin/preload_probe" lookup 2>&1)
[[ "$(kv "$l" get_proc)" == *gshare* ]] || { ok6=0; echo "      lookup: $(tr '\n' ' ' <<< "$l")"; }
[[ $ok6 == 1 ]] && pass "6 linked, dlsym, cuGetProcAddress_v2 (+ptds) all reach the shim (quota 256 MiB seen on each)" || fail "6 driver entry paths"

# --- 7. hand-off between two processes through the arbiter ---------------------------------------
"$B/bin/gshare-arbiter" --socket "$W/arb.sock" --gpus 0 --gpu-memory 200MiB --gpu-count 1 \
  --summary "$W/arb.json" --log-level info 2> "$W/arbiter.log" &
AP=$!
for _ in $(seq 100); do [[ -S "$W/arb.sock" ]] && break; sleep 0.1; done
targets=()
for i in 0 1; do
  if start_sample cnn "cnn-$i" "$W/handoff-$i" LD_PRELOAD="$SHIM" GSHARE_VGPU_MEMORY=128MiB \
       GSHARE_ARBITER_SOCKET="$W/arb.sock" GSHARE_FUNCTION="cnn-$i" GSHARE_SLO_MS=1000 \
       GSHARE_LOG_FILE="$W/handoff-$i.shim.log"; then
    targets+=(--target "cnn-$i=http://127.0.0.1:$SPORT/v2/models/cnn-$i@5000")
  else fail "7 cnn-$i did not start: $(tail -2 "$W/handoff-$i.err")"; fi
done
if timeout 120 "$B/bin/gshare-loadgen" "${targets[@]}" --rate 10 --duration 8 > "$W/handoff.lg" 2>&1; then lg7=ok; else lg7=bad; fi
cleanup; PIDS=()
kill -TERM $AP; wait $AP
swaps=$(python3 -c "import json;j=json.load(open('$W/arb.json'));print(j['swap_outs'],j['swap_ins'],j['grants'])" 2>/dev/null)
if [[ $lg7 == ok && -n "$swaps" && ${swaps%% *} -ge 1 ]]; then
  pass "7 hand-off: two 128 MiB vGPUs on a 200 MiB arbiter GPU: $(grep -E '^ *all' "$W/handoff.lg" | tr -s ' '); swap-outs/ins/grants: $swaps"
else fail "7 hand-off: loadgen $lg7, arbiter swaps/grants '$swaps': $(tail -3 "$W/handoff.lg")"; fi

# --- 8. an unmodified PyTorch inference under the shim ---------------------------------------------
if LD_LIBRARY_PATH=${HOST_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}} timeout 60 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  LD_LIBRARY_PATH=${HOST_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}} LD_PRELOAD="$SHIM" GSHARE_VGPU_MEMORY=4GiB \
    GSHARE_TORCH_QUOTA_BYTES=4294967296 GSHARE_CONTROL_SOCKET="$W/torch.sock" \
    GSHARE_LOG_FILE="$W/torch.shim.log" timeout 240 python3 "$ROOT/tests/gpu/torch_probe.py" > "$W/torch.out" 2>&1
  rc=$?
  sed 's/^/      /' "$W/torch.out" | grep -v '^      RESULT' | tail -12
  [[ $rc == 0 ]] && pass "8 PyTorch under the shim: quota, OOM, outputs identical after swaps" ||
    fail "8 PyTorch under the shim (exit $rc): $(grep -m2 -E '^FAIL|Error' "$W/torch.out")"
else
  echo "SKIP  8 PyTorch under the shim: no PyTorch with CUDA here"
fi

# --- report ---------------------------------------------------------------------------------------
gbps() { python3 -c "b=float('${1:-0}' or 0); t=float('${2:-0}' or 0); print(f'{b/t:.2f} GB/s' if t > 0 else 'n/a')"; }
P_OUT_BYTES=$(kv "${p_out:-}" bytes); P_OUT_COPY=$(kv "${p_out:-}" copy_ns); P_OUT_NS=$(kv "${p_out:-}" elapsed_ns)
P_IN_BYTES=$(kv "${p_in:-}" bytes); P_IN_NS=$(kv "${p_in:-}" elapsed_ns)
echo "== report =="
echo "device->host copy bandwidth (PCIe, the swap-out copies of the probe's $(( ${P_OUT_BYTES:-0} >> 20 )) MiB): $(gbps "$P_OUT_BYTES" "$P_OUT_COPY")"
echo "swap-out throughput (probe, end to end incl. drain): $(gbps "$P_OUT_BYTES" "$P_OUT_NS") first (pins its staging: pin_ns=$(kv "${p_out:-}" pin_ns)), $(gbps "$(kv "${p_out2:-}" bytes)" "$(kv "${p_out2:-}" elapsed_ns)") second (staging already pinned)"
echo "      probe swap-out replies: first '${p_out:-}'; second '${p_out2:-}'"
echo "swap-in throughput (probe): $(gbps "$P_IN_BYTES" "$P_IN_NS")"
echo "sample-llm swap-out $(( ${LLM_OUT_BYTES:-0} >> 20 )) MiB after 'prepare': $(gbps "$LLM_OUT_BYTES" "$LLM_OUT_NS") end to end (copy $(gbps "$LLM_OUT_BYTES" "$LLM_OUT_COPY")); swap-in: $(gbps "$LLM_IN_BYTES" "$LLM_IN_NS")"
echo "time: $((SECONDS - T0)) s; logs in $W"
[[ $FAILED == 0 ]] && echo "RESULT: PASS" || echo "RESULT: FAIL"
exit $FAILED
