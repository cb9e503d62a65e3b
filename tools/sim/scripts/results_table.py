#!/usr/bin/env python3
"""Renders the JSON written by results.sh as the Markdown tables of docs/scheduling.md.

Usage: tools/sim/scripts/results_table.py RESULTS_DIR
"""
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)["runs"]


def row(r):
    return "| {} | {} | {:.2f} | {:.1f} | {:.0f} | {:.0f} | {} | {:.0f} | {:.2f} |".format(
        r["policy"], r["requests"], 100 * r["slo_attainment"], r["p50_ms"], r["p99_ms"],
        r["gpu_seconds"], r["peak_gpus"], r["swap_bytes"] / 2**30, r["cost_usd"])


HEADER = ("| policy | requests | SLO % | p50 ms | p99 ms | GPU-s | peak GPUs | swap GiB | cost $ |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|")


def main():
    d = sys.argv[1]
    for name in ["trace", "synthetic-1", "synthetic-2", "synthetic-3"]:
        runs = load(os.path.join(d, name + ".json"))
        proxy = load(os.path.join(d, name + "-proxy.json"))
        print("### {}\n".format(name))
        print(HEADER)
        for r in runs + proxy:
            print(row(r))
        by = {r["policy"]: r for r in runs}
        a, k, p = by["aggressive"], by["keepalive"], proxy[0]
        print("\naggressive vs keepalive: {:.1f}% less GPU time (SLO {:.2f}% vs {:.2f}%); "
              "vs proxy-swap (pool {}): {:.1f}% lower cost (SLO {:.2f}% vs {:.2f}%)\n".format(
                  100 * (1 - a["gpu_seconds"] / k["gpu_seconds"]), 100 * a["slo_attainment"],
                  100 * k["slo_attainment"], p["peak_gpus"],
                  100 * (1 - a["cost_usd"] / p["cost_usd"]), 100 * a["slo_attainment"],
                  100 * p["slo_attainment"]))
    for name in ["ablation-trace", "ablation-synthetic-1"]:
        print("### {}\n".format(name))
        print(HEADER)
        for r in load(os.path.join(d, name + ".json")):
            print(row(r))
        print()


if __name__ == "__main__":
    main()
