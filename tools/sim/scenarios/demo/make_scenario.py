#!/usr/bin/env python3
"""Builds the gshare-sim scenario that models the default demo (docs/demo.md) from one demo
run's per-request records: the same requests at the same times on the same 12 functions, each
request's execution time measured on the dedicated baseline of that run.

Usage: make_scenario.py RUN_DIR OUT_DIR
  RUN_DIR: a `gshare-demo --run-dir` directory (reads dedicated/records.csv)
  OUT_DIR: writes requests.csv (timestamp_ms,function,exec_ms)

A request's execution time is its dedicated latency less the time it waited for its own
server's previous request (a server runs one request at a time): finish - max(arrival,
previous finish of the same function). catalog.toml (beside this script) says what the arbiter
tells the policy about each function (weights = the vGPU quota, no context, the policy's 1 ms
prior, the demo's SLOs).
"""
import csv
import sys
from collections import defaultdict


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    run_dir, out_dir = sys.argv[1], sys.argv[2]
    with open(f"{run_dir}/dedicated/records.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["outcome"] == "ok"]
    rows.sort(key=lambda r: float(r["scheduled_ms"]))
    last_finish = defaultdict(float)
    out = []
    for r in rows:
        name = r["target"]
        arrival = float(r["scheduled_ms"])
        finish = arrival + float(r["latency_ms"])
        start = max(arrival, last_finish[name])
        last_finish[name] = finish
        out.append((arrival, name, max(0.05, finish - start)))
    with open(f"{out_dir}/requests.csv", "w", newline="") as f:
        f.write("timestamp_ms,function,exec_ms\n")
        for arrival, name, exec_ms in out:
            f.write(f"{arrival:.3f},{name},{exec_ms:.3f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
