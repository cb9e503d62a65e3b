#!/usr/bin/env bash
# Everything gshare measures on a real GPU host, in one bounded run: the smoke test
# (tests/gpu/smoke.sh), the shim's per-request overhead on the samples
# (sample_overhead_bench --real-gpu, with the arbiter with and without the sole-tenant lease,
# and stand-alone when the first run is over the 5% target; a kernel on VMM vs cuMemAlloc
# buffers), the multi-GPU checks on a host with two GPUs or more (tests/gpu/multi_gpu_check.sh),
# the end-to-end demo on the real driver (gshare-demo --real-gpu --quick), and with
# GSHARE_MPS_CHECK=1 the MPS check (tests/gpu/mps-check.sh, LOG_DIR/mps-check/). Each part has its own time limit, so one that hangs cannot take the others' time.
# Usage: tests/gpu/full-check.sh BUILD_DIR LOG_DIR
#   BUILD_DIR: a build tree or a folder from tests/gpu/pack-prebuilt.sh (then set
#   GSHARE_SMOKE_PREBUILT=1); LOG_DIR receives smoke.txt, smoke-logs.tar.gz, overhead*.txt,
#   demo.json, demo.txt and demo-logs.tar.gz.
# Exit status: that of the smoke test (0 passed), or 2 without a GPU.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:?usage: full-check.sh BUILD_DIR LOG_DIR}
L=${2:?usage: full-check.sh BUILD_DIR LOG_DIR}
mkdir -p "$L"

GSHARE_SMOKE_LOGS=$L timeout "${GSHARE_SMOKE_LIMIT:-200}" bash "$ROOT/tests/gpu/smoke.sh" "$B" 2>&1 | tee "$L/smoke.txt"
smoke=${PIPESTATUS[0]}
[[ $smoke == 2 ]] && exit 2

[[ -d "$B/deps" ]] && export LD_LIBRARY_PATH="$B/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
over() {  # NAME [flags...]: one overhead run, its counters printed
  local name=$1; shift
  if [[ -x "$B/bin/sample_overhead_bench" ]]; then
    timeout 90 "$B/bin/sample_overhead_bench" --real-gpu "$@" > "$L/$name.txt" 2>&1
    echo "== overhead ($name) =="
    grep -E '^BM_' "$L/$name.txt" | sed -E 's/ +/ /g'
  fi
}
over overhead
# The same without the sole-tenant lease (a round trip through the arbiter per request), so one
# run shows what the lease saves; arbiter_lease_takes in the first run says it was taken.
over overhead-nolease --no-lease
if grep -qE 'ratio_p50=(1\.(0[5-9]|[1-9])|[2-9])' "$L/overhead.txt" 2>/dev/null; then
  over overhead-standalone --standalone
fi
# Device side of the stand-alone gap: one memory-bound kernel on cuMemAlloc vs VMM buffers.
if [[ -x "$B/bin/preload_memory_vmm_kernel_bench" ]]; then
  echo "== kernel on cuMemAlloc vs VMM (vGPU) buffers =="
  timeout 60 "$B/bin/preload_memory_vmm_kernel_bench" --real-gpu > "$L/vmm-kernel.txt" 2>&1
  grep -E '^BM_' "$L/vmm-kernel.txt" | sed -E 's/ +/ /g'
fi

# Two GPUs or more: the device view, placement and moves between GPUs (docs/multi-gpu.md).
if (( $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') >= 2 )); then
  echo "== multi-GPU checks =="
  timeout 240 bash "$ROOT/tests/gpu/multi_gpu_check.sh" "$B" > "$L/multi-gpu.txt" 2>&1
  echo "multi_gpu_check exit $?"
  grep -E '^(PASS|FAIL|REFUSED)|moved' "$L/multi-gpu.txt" | head -40
fi

if [[ -x "$B/bin/gshare-demo" ]]; then
  echo "== demo on the real GPU =="
  timeout 150 "$B/bin/gshare-demo" --real-gpu --gpus 1 --quick --run-dir "$L/demo-run" \
    --json "$L/demo.json" > "$L/demo.txt" 2>&1
  echo "gshare-demo exit $?"
  sed -n '/== gshare demo: summary ==/,$p' "$L/demo.txt" | head -40
  tar -C "$L" -czf "$L/demo-logs.tar.gz" demo-run 2>/dev/null && rm -rf "$L/demo-run"
fi

# Optional (GSHARE_MPS_CHECK=1): co-running under a private MPS daemon (tests/gpu/mps-check.sh:
# pair slowdowns, client limit, VMM and checkpoint of MPS clients, simulator parameters) into
# LOG_DIR/mps-check/. About 4 minutes; it leaves the GPU's compute mode and time slice alone.
if [[ "${GSHARE_MPS_CHECK:-0}" == 1 ]]; then
  echo "== MPS check =="
  OUT=$L/mps-check timeout 480 bash "$ROOT/tests/gpu/mps-check.sh" --build "$B" > "$L/mps-check.txt" 2>&1
  echo "mps-check exit $?"
  grep -E '^(PASS|FAIL|SKIP|RESULT)|^mps_|^# (SIMCUDA|mps_|VMM)' "$L/mps-check.txt" | head -40
fi
exit "$smoke"
