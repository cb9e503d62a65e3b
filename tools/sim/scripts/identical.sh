#!/usr/bin/env bash
# Checks that two gshare-sim builds give the same results to the byte (a speed-up must change no
# decision): every policy and some ablations on the shipped trace and synthetic seeds 1-2 (also
# with copy-out evictions, co-running, scale-out routers, several nodes, the demo scenario and
# 1,000 functions), each run's table and JSON report compared with diff. Exits non-zero on the
# first difference.
# Usage: tools/sim/scripts/identical.sh BASE_GSHARE_SIM NEW_GSHARE_SIM [OUT_DIR]
set -euo pipefail
base=$1
new=$2
out=${3:-sim-identical}
here=$(cd "$(dirname "$0")" && pwd)
pol=keepalive,fifo,dual-queue,aggressive,aggressive-no-residency,aggressive-no-rescue,aggressive-no-interference,aggressive-no-scale-no-deep-evict,aggressive-no-learned,aggressive-no-eager
trace=(--format azure-llm --trace "$here/../../workload/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"
       --functions 100 --gpus 200 --seed 1)
scenario=$here/../scenarios/demo
runs=()
add() { runs+=("$*"); }  # name, then gshare-sim arguments (no spaces inside an argument)
add trace "${trace[@]}" --policy "$pol"
add trace-proxy "${trace[@]}" --policy proxy-swap --pool 56
add trace-copies "${trace[@]}" --policy "$pol" --swap-out-copies --link-gbps 2.2 --policy-link-gbps 24
for seed in 1 2; do
  syn=(--synthetic --functions 300 --duration 3600 --gpus 400 --seed "$seed")
  add "syn-$seed" "${syn[@]}" --policy "$pol"
  add "syn-$seed-proxy" "${syn[@]}" --policy proxy-swap --pool 128
  add "syn-$seed-low" "${syn[@]}" --max-instance-load 0.1 --routing idle-first --policy keepalive,aggressive
  add "syn-$seed-warm" "${syn[@]}" --max-instance-load 0.1 --routing warm-first --policy aggressive
  add "syn-$seed-corun" --synthetic --functions 300 --duration 900 --gpus 400 --seed "$seed" --corun \
    --policy aggressive,dual-queue
  add "syn-$seed-copies" --synthetic --functions 300 --duration 900 --gpus 100 --seed "$seed" \
    --swap-out-copies --policy aggressive,aggressive-no-residency,fifo
done
add demo --format csv --trace "$scenario/requests.csv" --catalog "$scenario/catalog.toml" --models-by-name \
  --gpus 2 --link-gbps 2.2 --policy-link-gbps 24 --slice-ms 100 --gpu-memory 1536MiB \
  --policy aggressive-no-scale-no-deep-evict,aggressive,dual-queue,fifo,aggressive-no-residency-no-scale-no-deep-evict
add cluster --synthetic --functions 300 --duration 900 --gpus 32 --nodes 4 --seed 1 --policy aggressive,keepalive
add big-1000 --synthetic --functions 1000 --duration 3600 --gpus 1000 --seed 1 --policy aggressive,dual-queue
mkdir -p "$out/base" "$out/new"
for run in "${runs[@]}"; do
  read -r -a args <<< "$run"
  name=${args[0]}
  for side in base new; do
    sim=$base
    [[ $side == new ]] && sim=$new
    "$sim" "${args[@]:1}" --json "$out/$side/$name.json" > "$out/$side/$name.txt"
  done
  diff "$out/base/$name.txt" "$out/new/$name.txt" && diff "$out/base/$name.json" "$out/new/$name.json"
  echo "identical: $name"
done
echo "all ${#runs[@]} runs identical"
