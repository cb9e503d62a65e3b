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
#include <map>
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

// The co-run variant of the gshare run (--corun): the GPUs marked for co-running (the arbiter's
// --corun-gpus; every function's CUDA_MPS_PIPE_DIRECTORY is the first one's daemon) and, per
// sample kind, the MPS share (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and GSHARE_CORUN_DEMAND.
struct CorunSetup {
  std::vector<uint32_t> gpus;
  struct Kind {
    std::string model;   // the catalog model the sample stands for
    uint32_t share = 100;
    std::string demand;  // "compute=P,bandwidth=P"
  };
  std::map<std::string, Kind> kinds;
};

// CorunSetup for the mix: kinds cnn/bert/llm stand for the default catalog's resnet50,
// bert_base and llm_1b (the samples' closest models by weights); share = the compute demand
// rounded up to 25/50/75/100 (as the policy's share classes). The GPUs: all of them with one
// GPU; with several only GPU 0 (see docs/demo.md: a process joins one daemon before the
// arbiter tells it its GPU).
workload::Result<CorunSetup> MakeCorunSetup(const std::vector<FunctionSpec>& functions, uint32_t gpus);

struct SharedRun {
  RunOutcome outcome;
  GpuUsage usage;
  nlohmann::json arbiter_summary;
  std::string event_ring_path;
};

// corun == nullptr: the time-only run (directory gshare/); else the co-run run (gshare-corun/).
workload::Result<SharedRun> RunShared(const Environment& env, const std::vector<FunctionSpec>& functions,
                                      const CorunSetup* corun = nullptr);
workload::Result<RunOutcome> RunDedicated(const Environment& env, const std::vector<FunctionSpec>& functions);

}  // namespace gshare::demo
