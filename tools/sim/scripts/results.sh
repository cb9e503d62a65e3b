#!/usr/bin/env bash
# Reproduces the results tables of docs/scheduling.md: every policy on the shipped Azure LLM
# trace and on three seeded synthetic workloads, proxy-swap at the smallest fixed pool that
# matches aggressive's SLO attainment, the aggressive ablations, the exact-solver grading, and
# issue 21's runs (measured costs, routers, several nodes).
# Usage: tools/sim/scripts/results.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
ablations=aggressive,aggressive-no-learned,aggressive-no-residency,aggressive-no-prefetch,aggressive-no-deep-evict,aggressive-no-release,aggressive-no-scale,aggressive-no-eager,aggressive-no-interference,aggressive-no-edf,aggressive-no-typical,aggressive-no-collisions,aggressive-no-cold,aggressive-no-rescue

. "$(dirname "$0")/lib.sh"

trace_args=(--format azure-llm --functions 100 --gpus 200 --seed 1)
run trace "${trace_args[@]}" --policy "$policies" --plot "$out/plots-trace"
proxy trace "${trace_args[@]}"
# Seeds 1-3 are the issue's workloads; 4 and 5 are held out (never looked at while tuning).
for seed in 1 2 3 4 5; do
  syn_args=(--synthetic --functions 300 --duration 3600 --gpus 400 --seed "$seed")
  run "synthetic-$seed" "${syn_args[@]}" --policy "$policies"
  proxy "synthetic-$seed" "${syn_args[@]}"
done
# The same workloads where a FaaS router scales out at 10% load per instance and prefers idle
# instances: little self-queueing, so the dedicated-GPU ceiling is above 99% (except seed 3,
# whose own execution times exceed the SLO for 1.2% of requests).
low=(--max-instance-load 0.1 --routing idle-first)
run low-trace --format azure-llm --functions 100 --gpus 400 --seed 1 "${low[@]}" --policy "$policies"
proxy low-trace --format azure-llm --functions 100 --gpus 400 --seed 1 "${low[@]}"
for seed in 1 2 3 4 5; do
  syn_args=(--synthetic --functions 300 --duration 3600 --gpus 1000 --seed "$seed" "${low[@]}")
  run "low-synthetic-$seed" "${syn_args[@]}" --policy "$policies"
  proxy "low-synthetic-$seed" "${syn_args[@]}"
done
# The default demo (docs/demo.md) as a scenario: its requests, 2 GPUs of 2 GiB and of 1.5 GiB
# (1.35x overcommit), simcuda's swap bandwidth, what the arbiter tells the policy.
scenario=$(dirname "$0")/../scenarios/demo
demo_args=(--format csv --trace "$scenario/requests.csv" --catalog "$scenario/catalog.toml"
           --models-by-name --gpus 2 --link-gbps 2.2 --policy-link-gbps 24 --slice-ms 100)
run demo-scenario "${demo_args[@]}" --gpu-memory 2GiB \
  --policy aggressive-no-scale-no-deep-evict,aggressive,dual-queue,fifo,aggressive-no-residency-no-scale-no-deep-evict
run demo-scenario-1.35x "${demo_args[@]}" --gpu-memory 1536MiB \
  --policy aggressive-no-scale-no-deep-evict,aggressive,dual-queue,fifo,aggressive-no-residency-no-scale-no-deep-evict
run ablation-trace "${trace_args[@]}" --policy "$ablations"
for seed in 1 2 3 4 5; do  # 2-5 since 2026-12-03 (measured once; nothing tuned on them)
  run "ablation-synthetic-$seed" --synthetic --functions 300 --duration 3600 --gpus 400 --seed "$seed" \
    --policy "$ablations"
done
# Issue 21: the rescue idea on every workload (held-out seeds 4 and 5 included), measured costs
# (the H200's 48-53 GB/s swaps, docs/demo.md; simcuda's ~2.2 GB/s), routers that see warm
# instances, and several nodes (10,000 functions on 100 nodes of 32 GPUs).
run ablation-rescue-trace "${trace_args[@]}" --policy aggressive,aggressive-no-rescue
run ablation-rescue-low-trace --format azure-llm --functions 100 --gpus 400 --seed 1 "${low[@]}" \
  --policy aggressive,aggressive-no-rescue
for seed in 1 2 3 4 5; do
  run "ablation-rescue-synthetic-$seed" --synthetic --functions 300 --duration 3600 --gpus 400 \
    --seed "$seed" --policy aggressive,aggressive-no-rescue
done
for bw in 50 2.2; do
  run "trace-bw$bw" "${trace_args[@]}" --policy keepalive,dual-queue,aggressive --link-gbps "$bw"
  for seed in 1 2 3 4 5; do
    run "synthetic-$seed-bw$bw" --synthetic --functions 300 --duration 3600 --gpus 400 --seed "$seed" \
      --policy keepalive,dual-queue,aggressive --link-gbps "$bw"
  done
done
for routing in warm-first idle-first round-robin; do
  run "router-trace-$routing" --format azure-llm --functions 100 --gpus 400 --seed 1 \
    --max-instance-load 0.1 --routing "$routing" --policy keepalive,aggressive
  for seed in 1 2 3; do
    run "router-synthetic-$seed-$routing" --synthetic --functions 300 --duration 3600 --gpus 1000 \
      --seed "$seed" --max-instance-load 0.1 --routing "$routing" --policy keepalive,aggressive
  done
done
cluster=(--synthetic --functions 10000 --duration 3600 --nodes 100 --gpus 32 --seed 1 --node-overcommit 1
         --policy aggressive)
run cluster-10k "${cluster[@]}" --node-score least-allocated,most-allocated,gshare
for cap in 0.1 0.3; do
  run "cluster-10k-cap$cap" "${cluster[@]}" --node-score gshare --node-busy-cap "$cap"
done
run exact-synthetic --synthetic --functions 300 --duration 3600 --gpus 400 --seed 1 \
  --policy keepalive,proxy-swap,fifo,dual-queue,aggressive --exact --quiet
for seed in 2 3 4 5; do  # each a few minutes of CBC
  run "exact-synthetic-$seed" --synthetic --functions 300 --duration 3600 --gpus 400 --seed "$seed" \
    --policy keepalive,proxy-swap,fifo,dual-queue,aggressive --exact --quiet
done
run exact-trace "${trace_args[@]}" --policy keepalive,proxy-swap,fifo,dual-queue,aggressive \
  --exact --quiet
