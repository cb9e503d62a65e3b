// The demo's two runs, each a complete start-load-stop cycle in its own directory:
//  - RunShared: gshare-arbiter + every function under LD_PRELOAD=libgshare.so on the shared
//    GPUs (simcuda's, or the real driver's), load from gshare-loadgen, accounting from the
//    arbiter's event ring;
//  - RunDedicated: the same functions without the shim, each alone on its own simulated GPU,
//    the same load.
// Every process is started here and stopped before returning, also on errors or interruption.
//
// Thread-safety: one run at a time per Environment.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "gshare/demo/functions.h"
#include "gshare/demo/gpu_usage.h"
#include "gshare/demo/options.h"
#include "gshare/demo/report.h"
#include "gshare/workload/result.h"

namespace gshare::demo {

struct Environment {
  DemoOptions options;
  std::string bin_dir, lib_dir, simcuda_lib_dir;  // from the build directory
  std::string run_dir;
  const std::atomic<bool>* interrupted = nullptr;
  void (*say)(const std::string&) = nullptr;  // progress lines
};

struct SharedRun {
  RunOutcome outcome;
  GpuUsage usage;
  nlohmann::json arbiter_summary;
  std::string event_ring_path;
};

workload::Result<SharedRun> RunShared(const Environment& env, const std::vector<FunctionSpec>& functions);
workload::Result<RunOutcome> RunDedicated(const Environment& env, const std::vector<FunctionSpec>& functions);

}  // namespace gshare::demo
