// The demo's result: the gshare run and the dedicated-GPU baseline (gshare-loadgen runs with the
// GPU-side fields filled in), the arbiter's swap accounting, and the paths of what was written;
// as the printed summary and as JSON in gshare-sim's "runs" format (docs/demo.md).
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gshare/demo/functions.h"
#include "gshare/demo/gpu_usage.h"
#include "gshare/demo/latencies.h"

namespace gshare::demo {

struct RunOutcome {
  std::string label;          // "gshare" or "dedicated"
  std::string description;    // e.g. "2 simulated GPUs of 2 GiB, shared through gshare"
  nlohmann::json run;         // runs[0] of gshare-loadgen's JSON
  std::string workload;       // its "workload"
  std::vector<RequestRecord> records;
  double window_s = 0;        // wall time of the load (loadgen start to exit)
  double gpu_seconds = 0;     // see docs/demo.md
  uint32_t gpus = 0;          // GPUs the run had
  uint32_t peak_gpus = 0;
  uint64_t swap_bytes = 0;
  std::vector<std::string> problems;  // servers or daemons that did not stop cleanly, ...
};

struct DemoReport {
  std::string headline;  // what ran, one line
  std::vector<FunctionSpec> functions;
  uint64_t gpu_memory_bytes = 0;  // per GPU, gshare run
  RunOutcome gshare;
  std::optional<RunOutcome> dedicated;
  GpuUsage usage;             // gshare run, from the event ring
  nlohmann::json arbiter;     // the arbiter's --summary
  std::string run_dir, json_path, plot_path, trace_path, trace_note;
  // --corun: the same fleet and load with co-running (label "gshare-corun"), its ring's
  // accounting, its arbiter's summary, and what it was set up with (GPUs, per-kind shares).
  std::optional<RunOutcome> corun;
  GpuUsage corun_usage;
  nlohmann::json corun_arbiter;
  nlohmann::json corun_setup;
};

// gshare GPU-seconds / (functions x gshare window): the "ratio" line (0 if no window).
double GpuSecondsRatio(const DemoReport& r);
// Requests that failed in any run (the demo's exit status is 1 if this is not 0).
uint64_t TotalErrors(const DemoReport& r);

nlohmann::json ReportJson(const DemoReport& r);
std::string ReportText(const DemoReport& r);

}  // namespace gshare::demo
