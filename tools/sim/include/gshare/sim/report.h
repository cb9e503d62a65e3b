// gshare-sim's outputs: the terminal table, the JSON report ({"runs":[{"policy", "requests",
// "slo_attainment", "p50_ms", "p99_ms", "gpu_seconds", "peak_gpus", "swap_bytes",
// "cost_usd"}, ...]} plus extra fields), and the SVG plots drawn with gnuplot (GPUs in use over
// time; latency CDFs), and the exact-solver comparison lines.
//
// Thread-safety: reentrant; the plot function runs gnuplot as a child process.
#pragma once

#include <string>
#include <vector>

#include "gshare/sim/engine.h"

namespace gshare::sim {

// A fixed-width table, one row per run.
std::string FormatTable(const std::vector<RunResult>& runs);

// Late requests by cause per run (RunResult's late_* counters), with the dedicated-GPU ceiling.
std::string FormatMissCauses(const std::vector<RunResult>& runs);

// Swap-ins (count, GiB), migrations and evictions per run: how much placement moves state.
std::string FormatChurn(const std::vector<RunResult>& runs);

// The JSON report. `description` goes to a top-level "workload" key.
std::string FormatJson(const std::vector<RunResult>& runs, const std::string& description);

// Writes DIR/gpus.svg and DIR/latency_cdf.svg (and their .dat / .gp inputs) with gnuplot.
// Returns "" on success, else what failed.
std::string WritePlots(const std::vector<RunResult>& runs, const std::string& dir);

}  // namespace gshare::sim
