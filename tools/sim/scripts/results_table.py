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

CAUSES = ["execution", "self_queue", "cold_start", "swap_in", "gpu_queue"]
CAUSE_HEADER = ("| policy | late % | execution | own queue | cold start | swap-in | GPU queue |\n"
                "|---|---:|---:|---:|---:|---:|---:|")


def cause_row(r):
    n = r["requests"] / 100.0
    late = r["requests"] - round(r["slo_attainment"] * r["requests"])
    return "| {} | {:.2f} | {} |".format(
        r["policy"], late / n, " | ".join("{:.2f}".format(r["late_causes"][c] / n) for c in CAUSES))


LIMIT_HEADER = ("| policy | SLO − ceiling (points) | busy % | GPU-s | × lower bound |\n"
                "|---|---:|---:|---:|---:|")


def limit_row(r):
    return "| {} | {:+.2f} | {:.1f} | {:.0f} | {:.1f} |".format(
        r["policy"], r["ceiling_gap_points"], 100 * r["busy_share"], r["gpu_seconds"],
        r["gpu_time_over_bound"])


def bounds_line(path):
    with open(path) as f:
        b = json.load(f).get("bounds")
    if not b:
        return None
    return ("GPU-time lower bound {:.0f} GPU-s = max(busy {:.0f}, memory {:.0f}, of which {:.0f} "
            "held between requests; {} instances cannot always be restored in time)".format(
                b["lower_bound_gpu_seconds"], b["busy_seconds"], b["memory_seconds"],
                b["hold_seconds"], b["unswappable_functions"]))


def workload(d, name):
    runs = load(os.path.join(d, name + ".json"))
    proxy = load(os.path.join(d, name + "-proxy.json"))
    by = {r["policy"]: r for r in runs}
    a, k, p = by["aggressive"], by["keepalive"], proxy[0]
    return runs, proxy, {
        "name": name,
        "ceiling": 100 * a["dedicated_attainment"],
        "keep_slo": 100 * k["slo_attainment"],
        "agg_slo": 100 * a["slo_attainment"],
        "vs_keep": 100 * (1 - a["gpu_seconds"] / k["gpu_seconds"]),
        "pool": p["peak_gpus"],
        "proxy_slo": 100 * p["slo_attainment"],
        "vs_proxy": 100 * (1 - a["cost_usd"] / p["cost_usd"]),
    }


def main():
    d = sys.argv[1]
    names = ["trace"] + ["synthetic-%d" % s for s in range(1, 6)]
    names += ["low-trace"] + ["low-synthetic-%d" % s for s in range(1, 6)]
    summary = []
    for name in names:
        if not all(os.path.exists(os.path.join(d, name + x)) for x in (".json", "-proxy.json")):
            continue  # a partial results directory (e.g. generality.sh's alone)
        runs, proxy, s = workload(d, name)
        summary.append(s)
        print("### {}\n".format(name))
        print(HEADER)
        for r in runs + proxy:
            print(row(r))
        print("\nLate requests by cause, % of all requests (ceiling: {:.2f}% on time with a "
              "dedicated resident GPU per instance):\n".format(s["ceiling"]))
        print(CAUSE_HEADER)
        for r in runs + proxy:
            print(cause_row(r))
        line = bounds_line(os.path.join(d, name + ".json"))
        if line:
            print("\nAgainst the limits ({}):\n".format(line))
            print(LIMIT_HEADER)
            for r in runs + proxy:
                if "ceiling_gap_points" in r:
                    print(limit_row(r))
        print("\naggressive vs keepalive: {:+.1f}% GPU time (SLO {:.2f}% vs {:.2f}%); "
              "vs proxy-swap (pool {}): {:+.1f}% cost (SLO {:.2f}% vs {:.2f}%)\n".format(
                  -s["vs_keep"], s["agg_slo"], s["keep_slo"], s["pool"], -s["vs_proxy"],
                  s["agg_slo"], s["proxy_slo"]))
    print("### Summary\n")
    print("| workload | ceiling % | keepalive SLO % | aggressive SLO % | GPU time vs keepalive | "
          "proxy pool | proxy SLO % | cost vs proxy |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for s in summary:
        print("| {name} | {ceiling:.2f} | {keep_slo:.2f} | {agg_slo:.2f} | {keep:+.1f}% | {pool} | "
              "{proxy_slo:.2f} | {proxy:+.1f}% |".format(keep=-s["vs_keep"], proxy=-s["vs_proxy"], **s))
    print()
    print("### Where aggressive's and proxy-swap's GPU time goes\n")
    print("GPU-seconds / simulated time = average GPUs powered; busy = share of GPU time executing "
          "requests; misses by cause in % of requests (aggressive / proxy-swap).\n")
    print("| workload | avg GPUs | busy % | swap GiB | cold start + swap-in | own queue | GPU queue |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for s in summary:
        by = {r["policy"]: r for r in load(os.path.join(d, s["name"] + ".json"))}
        a, p = by["aggressive"], load(os.path.join(d, s["name"] + "-proxy.json"))[0]

        def pct(r, *keys):
            return 100.0 * sum(r["late_causes"][k] for k in keys) / r["requests"]

        print("| {} | {:.1f} / {:.1f} | {:.1f} / {:.1f} | {:.0f} / {:.0f} | {:.2f} / {:.2f} | "
              "{:.2f} / {:.2f} | {:.2f} / {:.2f} |".format(
                  s["name"], a["gpu_seconds"] / a["end_s"], p["gpu_seconds"] / p["end_s"],
                  100 * a["busy_seconds"] / a["gpu_seconds"], 100 * p["busy_seconds"] / p["gpu_seconds"],
                  a["swap_bytes"] / 2**30, p["swap_bytes"] / 2**30,
                  pct(a, "cold_start", "swap_in"), pct(p, "cold_start", "swap_in"),
                  pct(a, "self_queue"), pct(p, "self_queue"), pct(a, "gpu_queue"), pct(p, "gpu_queue")))
    print()
    ablations = {}
    for name in ["ablation-trace", "ablation-synthetic-1"]:
        path = os.path.join(d, name + ".json")
        if os.path.exists(path):
            ablations[name] = {r["policy"]: r for r in load(path)}
    if len(ablations) == 2:
        print("### What each idea is worth (idea off vs aggressive; trace / synthetic seed 1)\n")
        print("| idea off | GPU time | SLO attainment |\n|---|---|---|")
        t, s1 = ablations["ablation-trace"], ablations["ablation-synthetic-1"]
        for name in t:
            if name == "aggressive" or name not in s1:
                continue
            gpu = ["{:+.0f}%".format(100 * (x[name]["gpu_seconds"] / x["aggressive"]["gpu_seconds"] - 1))
                   for x in (t, s1)]
            slo = ["{:+.2f} pt".format(100 * (x[name]["slo_attainment"] - x["aggressive"]["slo_attainment"]))
                   for x in (t, s1)]
            print("| {} | {} | {} |".format(name.replace("aggressive-no-", ""), " / ".join(gpu),
                                            " / ".join(slo)))
        print()
    for name in ["ablation-trace", "ablation-synthetic-1"]:
        if not os.path.exists(os.path.join(d, name + ".json")):
            continue
        print("### {}\n".format(name))
        print(HEADER)
        runs = load(os.path.join(d, name + ".json"))
        for r in runs:
            print(row(r))
        print()
        print(CAUSE_HEADER)
        for r in runs:
            print(cause_row(r))
        print()


LIMIT_COLUMNS = "SLO % | SLO − ceiling | busy % | GPU-s | × bound"
LIMIT_ALIGN = "---:|---:|---:|---:|---:|"


def limits(r):
    """SLO, its distance to the dedicated ceiling, busy share, GPU time and GPU time / lower bound."""
    return "{:.2f} | {:+.2f} | {:.1f} | {:.0f} | {:.1f}".format(
        100 * r["slo_attainment"], r["ceiling_gap_points"], 100 * r["busy_share"], r["gpu_seconds"],
        r["gpu_time_over_bound"])


def issue21(d):
    """The tables of docs/scheduling.md's "Issue 21" section, from results.sh's issue-21 runs."""
    def runs(name):
        path = os.path.join(d, name + ".json")
        return {r["policy"]: r for r in load(path)} if os.path.exists(path) else None

    rows = []
    for name in ["ablation-rescue-" + w for w in
                 ["trace", "low-trace"] + ["synthetic-%d" % s for s in range(1, 6)]]:
        r = runs(name)
        if r and "aggressive-no-rescue" in r:
            rows.append((name, r["aggressive"], r["aggressive-no-rescue"]))
    if rows:
        print("### rescue on every workload\n")
        print("| workload | aggressive SLO % | −no-rescue SLO % | Δ points | aggressive GPU-s | "
              "−no-rescue GPU-s | Δ GPU time |\n|---|---:|---:|---:|---:|---:|---:|")
        for name, a, n in rows:
            print("| {} | {:.3f} | {:.3f} | {:+.3f} | {:.0f} | {:.0f} | {:+.2f}% |".format(
                name, 100 * a["slo_attainment"], 100 * n["slo_attainment"],
                100 * (a["slo_attainment"] - n["slo_attainment"]), a["gpu_seconds"], n["gpu_seconds"],
                100 * (a["gpu_seconds"] / n["gpu_seconds"] - 1)))
        print()
    workloads = ["trace"] + ["synthetic-%d" % s for s in range(1, 6)]
    lines = []
    for w in workloads:
        base, hi, lo = runs(w), runs(w + "-bw50"), runs(w + "-bw2.2")
        if not (base and hi and lo):
            continue
        for p in ["keepalive", "dual-queue", "aggressive"]:
            for bw, r in (("24", base), ("50", hi), ("2.2", lo)):
                lines.append("| {} | {} | {} | {} |".format(w, p, bw, limits(r[p])))
    if lines:
        print("### The link: 24 GB/s (default), 50 (H200) and 2.2 (simcuda)\n")
        print("| workload | policy | link GB/s | " + LIMIT_COLUMNS + " |\n|---|---|---:|" + LIMIT_ALIGN)
        print("\n".join(lines) + "\n")
    lines = []
    for w in workloads:
        for routing in ["round-robin", "idle-first", "warm-first"]:
            r = runs("router-{}-{}".format(w, routing))
            for p, x in (r or {}).items():
                lines.append("| {} | {} | {} | {:.2f} | {} | {} | {} |".format(
                    w, p, routing, 100 * x["dedicated_attainment"], limits(x), x["swap_ins"],
                    x.get("rerouted", 0)))
    if lines:
        print("### Routers\n")
        print("| workload | policy | routing | ceiling % | " + LIMIT_COLUMNS + " | swap-ins | rerouted |\n"
              "|---|---|---|---:|" + LIMIT_ALIGN + "---:|---:|")
        print("\n".join(lines) + "\n")
    lines = []
    for w in ["trace"] + ["synthetic-%d" % s for s in range(1, 6)] + ["demo-scenario"]:
        for p, x in (runs("corun-" + w) or {}).items():
            lines.append("| {} | {} | {:.2f} | {} | {} | {} |".format(
                w, p, 100 * x["dedicated_attainment"], limits(x), x.get("corun_grants", 0),
                x.get("corun_revocations", 0)))
    if lines:
        print("### Co-running (corun.sh)\n")
        print("| workload | policy | ceiling % | " + LIMIT_COLUMNS + " | co-run grants | revocations |\n"
              "|---|---|---:|" + LIMIT_ALIGN + "---:|---:|")
        print("\n".join(lines) + "\n")
    lines = []
    for name in ["cluster-10k", "cluster-10k-cap0.1", "cluster-10k-cap0.3"]:
        path = os.path.join(d, name + ".json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for c in json.load(f)["cluster"]:
                lines.append("| {} | {} | {:.2f} | {:+.2f} | {:.0f} | {:.1f} | {:.2f} | {} | {} |".format(
                    name, c["score"], 100 * c["slo_attainment"], c["ceiling_gap_points"],
                    c["gpu_seconds"], 100 * c["busy_share"], c["gpu_time_over_bound"], c["nodes_used"],
                    c["unschedulable_instances"]))
    if lines:
        print("### Several nodes\n")
        print("| run | placement | SLO % | SLO − ceiling | GPU-s | busy % | × bound | nodes used | "
              "unschedulable |\n|---|---|---:|---:|---:|---:|---:|---:|---:|")
        print("\n".join(lines) + "\n")


GENERALITY = ["gen-synthetic-6", "gen-synthetic-7", "gen-synthetic-6-rate0.5", "gen-synthetic-6-rate2",
              "gen-synthetic-1000fn-8", "gen-trace-x2", "gen-trace-x0.5", "gen-trace-200fn-seed2",
              "gen-low-synthetic-6", "gen-low-synthetic-7"]


def generality(d):
    """generality.sh's workloads (never run while tuning) against issue 21's targets."""
    lines = []
    for name in GENERALITY:
        if not (os.path.exists(os.path.join(d, name + ".json"))
                and os.path.exists(os.path.join(d, name + "-proxy.json"))):
            continue
        runs, proxy, s = workload(d, name)
        by = {r["policy"]: r for r in runs}
        a, k, p = by["aggressive"], by["keepalive"], proxy[0]
        lines.append("| {} | {} | {:.2f} | {:.2f} | {:+.2f} | {:+.2f} | {:.1f}% | {:.1f} | {:.1f} / {:.1f} | "
                     "{} | {:.2f} | {:.1f}% |".format(
                         name[len("gen-"):], a["requests"], s["ceiling"], s["agg_slo"],
                         a["ceiling_gap_points"], k["ceiling_gap_points"],
                         100 * a["gpu_seconds"] / k["gpu_seconds"], 100 * a["busy_share"],
                         a["gpu_time_over_bound"], k["gpu_time_over_bound"], s["pool"], s["proxy_slo"],
                         100 * a["cost_usd"] / p["cost_usd"]))
        print("### {} (every policy)\n".format(name))
        print(LIMIT_HEADER)
        for r in runs + proxy:
            print(limit_row(r))
        print()
        print(CAUSE_HEADER)
        for r in runs + proxy:
            print(cause_row(r))
        print()
    if lines:
        print("### Generality: workloads never run while tuning, against issue 21's targets\n")
        print("| workload | requests | ceiling % | aggressive SLO % | SLO − ceiling | keepalive SLO − ceiling | "
              "GPU time / keepalive's | busy % | × bound (aggressive / keepalive) | proxy pool | "
              "proxy SLO % | cost / proxy-swap's |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        print("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
    issue21(sys.argv[1])
    generality(sys.argv[1])
