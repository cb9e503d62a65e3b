#!/usr/bin/env bash
# Manual measurement (not a CTest test): the arbiter's CPU time while one raw client writes its
# doorbell eventfd in a tight loop for 5 s, for doorbell_rate 0 (guard off), 10000 (default)
# and 1000. Usage: tests/fault/flood_cpu.sh [BUILD_DIR]   (needs gshare-arbiter and
# fault_raw_client built there). Prints one line per rate. See docs/security.md.
set -euo pipefail
B=${1:-build}/bin
tick_ms=$((1000 / $(getconf CLK_TCK)))
for rate in 0 10000 1000; do
  d=$(mktemp -d "${TMPDIR:-/tmp}/gshare-flood-cpu.XXXXXX")
  "$B/gshare-arbiter" --socket "$d/a.sock" --gpu-memory 1GiB --libcuda /nonexistent \
    --doorbell-rate "$rate" --doorbell-flood-disconnect 0s --summary "$d/summary.json" \
    > "$d/log" 2>&1 &
  apid=$!
  for _ in $(seq 200); do grep -q "listening on" "$d/log" && break; sleep 0.05; done
  t0=$(awk '{print $14 + $15}' "/proc/$apid/stat")
  "$B/fault_raw_client" flood-doorbell --socket "$d/a.sock" --quota-mib 64 --seconds 5 > "$d/flood.out"
  t1=$(awk '{print $14 + $15}' "/proc/$apid/stat")
  kill -TERM "$apid"
  wait "$apid" || true
  echo "doorbell_rate=$rate: arbiter CPU $(( (t1 - t0) * tick_ms )) ms in 5 s;" \
       "$(grep flooded "$d/flood.out") rings; $(grep -o '"doorbell_mutes": [0-9]*' "$d/summary.json")"
  rm -rf "$d"
done
