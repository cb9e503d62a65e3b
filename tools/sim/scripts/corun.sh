#!/usr/bin/env bash
# Issue 20's co-run table (docs/scheduling.md, "Co-running: results"): every GPU marked for
# co-running (--corun), aggressive (with its corun idea) and aggressive-corun-pack (placement
# and scale-down counting on co-running too) against time-only aggressive
# (aggressive-no-corun) on the shipped trace, synthetic seeds 1-3, held-out seeds 4-5 (and 6-8,
# held out from the harmless waiver of 2026-12-05), and the
# demo scenario. The table in docs/scheduling.md is read from OUT_DIR/corun-*.json (fields
# slo_attainment, dedicated_attainment, gpu_seconds, busy_seconds, corun_grants, corun_revocations).
# Usage: tools/sim/scripts/corun.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
build=${1:-build}
out=${2:-sim-results}
sim="$build/bin/gshare-sim"
mkdir -p "$out"
both=aggressive,aggressive-corun-pack,aggressive-no-corun
run() {  # name, then gshare-sim arguments
  local name=$1
  shift
  echo "== $name: gshare-sim $*"
  "$sim" "$@" --json "$out/$name.json" | tee "$out/$name.txt"
}
run corun-trace --format azure-llm --functions 100 --gpus 200 --seed 1 --corun --policy "$both"
for seed in 1 2 3 4 5 6 7 8; do
  run "corun-synthetic-$seed" --synthetic --functions 300 --duration 3600 --gpus 400 --seed "$seed" \
    --corun --policy "$both"
done
scenario=$(dirname "$0")/../scenarios/demo
run corun-demo-scenario --format csv --trace "$scenario/requests.csv" --catalog "$scenario/catalog.toml" \
  --models-by-name --gpus 2 --link-gbps 2.2 --policy-link-gbps 24 --slice-ms 100 --gpu-memory 2GiB \
  --corun --policy "$both"
