// gshare-sim's outputs: the terminal table, the JSON report ({"runs":[{"policy", "requests",
// "slo_attainment", "p50_ms", "p99_ms", "gpu_seconds", "peak_gpus", "swap_bytes",
// "cost_usd"}, ...]} plus extra fields), and the SVG plots drawn with gnuplot (GPUs in use over
// time; latency CDFs), and the exact-solver comparison lines.
//
// Thread-safety: reentrant; the plot function runs gnuplot as a child process.
#pragma once

#include <string>
#include <vector>

#include "gshare/sim/bounds.h"
#include "gshare/sim/cluster.h"
#include "gshare/sim/engine.h"

namespace gshare::sim {

// A fixed-width table, one row per run.
std::string FormatTable(const std::vector<RunResult>& runs);

// Late requests by cause per run (RunResult's late_* counters), with the dedicated-GPU ceiling.
std::string FormatMissCauses(const std::vector<RunResult>& runs);

// Swap-ins (count, GiB), migrations and evictions per run: how much placement moves state.
std::string FormatChurn(const std::vector<RunResult>& runs);

// Each run against the limits: SLO attainment minus the dedicated-GPU ceiling (points), the
// busy share of its GPU time, and its GPU time against the workload's lower bound (bounds.h).
std::string FormatLimits(const std::vector<RunResult>& runs, const WorkloadBounds& bounds);

// The JSON report. `description` goes to a top-level "workload" key; with `bounds`, a
// top-level "bounds" object and, per run, "ceiling_gap_points", "busy_share",
// "lower_bound_gpu_seconds" and "gpu_time_over_bound" (the same figures as FormatLimits).
std::string FormatJson(const std::vector<RunResult>& runs, const std::string& description,
                       const WorkloadBounds* bounds = nullptr);

// gshare-sim --nodes: one row per (policy, placement score): SLO, GPU time, nodes used,
// unschedulable instances; and the same as JSON ({"workload", "nodes", "bounds", "cluster":
// [{"policy", "score", "nodes_used", "unschedulable_instances", "unschedulable_requests",
// "node_gpu_seconds_max", and the per-run keys of FormatJson}]}).
std::string FormatClusterTable(const std::vector<ClusterResult>& results, const WorkloadBounds& bounds);
std::string FormatClusterJson(const std::vector<ClusterResult>& results, const std::string& description,
                              int nodes, const WorkloadBounds& bounds);

// Writes DIR/gpus.svg and DIR/latency_cdf.svg (and their .dat / .gp inputs) with gnuplot.
// Returns "" on success, else what failed.
std::string WritePlots(const std::vector<RunResult>& runs, const std::string& dir);

}  // namespace gshare::sim
