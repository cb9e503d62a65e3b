#!/usr/bin/env bash
# Issue 21's "traces you have not seen": the policies on workloads never run while aggressive's
# ideas and constants were chosen (docs/scheduling.md, "Generality"): synthetic seeds 6 and 7,
# a synthetic workload of 1,000 functions (seed 8), seed 6 at half and twice the rate, and the
# shipped trace at twice and half its rate and spread over 200 functions with another seed, and
# seeds 6 and 7 with instances at 0.1 load (results.sh's `low-...` configuration).
# Same runs as results.sh (every policy, then proxy-swap at the smallest pool that reaches
# aggressive's attainment); results_table.py renders them ("gen-" prefix).
# Usage: tools/sim/scripts/generality.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

both() {  # name, then workload arguments: every policy, then proxy-swap's pool
  local name=$1
  shift
  run "$name" "$@" --policy "$policies"
  proxy "$name" "$@"
}
for seed in 6 7; do
  both "gen-synthetic-$seed" --synthetic --functions 300 --duration 3600 --gpus 400 --seed "$seed"
done
for scale in 0.5 2; do
  both "gen-synthetic-6-rate$scale" --synthetic --functions 300 --duration 3600 --gpus 600 --seed 6 \
    --rate-scale "$scale"
done
# --time-compression C divides the trace's arrival times by C: C times the rate.
for c in 2 0.5; do
  both "gen-trace-x$c" --format azure-llm --functions 100 --gpus 200 --seed 1 --time-compression "$c"
done
both gen-trace-200fn-seed2 --format azure-llm --functions 200 --gpus 400 --seed 2
pools="8 16 24 32 40 48 56 64 80 96 128 160 200 240 280 320 400 480 560 640 800" \
  both gen-synthetic-1000fn-8 --synthetic --functions 1000 --duration 3600 --gpus 1500 --seed 8
# Seeds 6 and 7 in results.sh's `low-...` configuration (instances at 0.1 load, idle-first).
for seed in 6 7; do
  both "gen-low-synthetic-$seed" --synthetic --functions 300 --duration 3600 --gpus 1000 --seed "$seed" \
    --max-instance-load 0.1 --routing idle-first
done
