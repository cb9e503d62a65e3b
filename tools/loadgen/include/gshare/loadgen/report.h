// gshare-loadgen's results: per-target and overall request counts, errors by kind, SLO
// attainment, latency percentiles and throughput, as a table and as JSON in gshare-sim's
// "runs" format (docs/samples.md lists the fields).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gshare/loadgen/runner.h"

namespace gshare::loadgen {

struct Summary {
  std::string name;        // target name, or "all"
  double slo_ms = 0;       // the target's SLO (for "all": blank, each request its own)
  uint64_t requests = 0;   // planned and sent
  uint64_t ok = 0;         // answered and checked correct
  uint64_t errors = 0;     // everything else
  uint64_t wrong = 0;      // of errors: wrong digest or inconsistent outputs
  double slo_attainment = 0;  // fraction of requests answered correctly within the SLO
  double p50_ms = 0, p99_ms = 0, mean_ms = 0;  // over correct answers
  double throughput_rps = 0;  // correct answers per second of the run
};

// Nearest-rank percentile (q in [0, 1]) of ascending `sorted`; 0 when empty.
double NearestRankPercentile(const std::vector<double>& sorted, double q);

// One Summary per target then "all". `slo_ms[i]` is target i's SLO (> 0).
std::vector<Summary> Summarize(const std::vector<TargetInfo>& targets,
                               const std::vector<double>& slo_ms, const RunResult& run);

std::string FormatTable(const std::vector<Summary>& s);

// {"workload": description, "runs": [{"policy": label, "requests", "slo_attainment", "p50_ms",
// "p99_ms", "gpu_seconds": null, "peak_gpus": null, "swap_bytes": null, "cost_usd": null,
// "completed", "errors", "wrong_results", "throughput_rps", "duration_s", "errors_by_kind",
// "error_examples", "targets": [per-target summaries]}]}
std::string FormatJson(const std::string& label, const std::string& description,
                       const std::vector<Summary>& s, const RunResult& run);

// One line per request, in completion order, after a header line:
// "target,scheduled_ms,latency_ms,outcome" (target name; scheduled time since the run's start;
// latency from the scheduled arrival; OutcomeName). For plots and offline analysis.
std::string FormatRecordsCsv(const std::vector<TargetInfo>& targets, const RunResult& run);

}  // namespace gshare::loadgen
