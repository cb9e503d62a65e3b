// gshare-demo's settings (command-line flags; defaults are the README demo, --quick the CI one).
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gshare::demo {

struct DemoOptions {
  std::string mix = "cnn=6,bert=4,llm=2";
  std::string quotas = "cnn=96MiB,bert=320MiB,llm=1152MiB";
  std::string slos_ms = "cnn=300,bert=150,llm=3000";
  uint32_t gpus = 2;
  std::string gpu_memory = "2GiB";      // per GPU, managed by the arbiter (gshare run)
  // Memory of each simcuda device when it must differ from gpu_memory ("" = the same, the
  // default). Was a stop-gap while the shim placed every vGPU on device 0 (fixed); kept to
  // run the arbiter with less memory than the devices have.
  std::string simcuda_memory = "";
  std::string format = "azure-llm";     // gshare-loadgen trace format
  std::string trace;                    // trace file ("" = the format's default)
  double trace_seconds = 180;           // trace time replayed
  double time_compression = 3;          // trace seconds per wall second
  uint32_t concurrency = 8;             // loadgen workers
  std::string time_scale = "1";         // SIMCUDA_TIME_SCALE
  // Arbiter policy: the project's default without two of its ideas: scale-down (a fixed node
  // of two GPUs whose two llm vGPUs cannot share one) and parking idle functions (the policy
  // then counts their memory free and packs others there, evicting them for real); see
  // docs/demo.md "Why these scheduling settings".
  std::string policy = "aggressive-no-scale-no-deep-evict";
  // Arbiter slice and preemption grace. On simcuda a burst's kernels run on the CPU and a
  // preempted holder must still finish the work it queued, so short slices only add hand-offs,
  // and under CPU load a drain can outlast 200 ms and be enforced by a checkpoint (seconds).
  std::string slice = "100ms";
  std::string preempt_grace = "1s";
  std::vector<std::string> arbiter_options;  // extra "KEY=VALUE" -> gshare-arbiter --KEY VALUE
  bool baseline = true;                 // also run the dedicated baseline
  // Also run the gshare fleet a second time on the same load with co-running (issue 20):
  // simcuda's MPS daemons under the arbiter, every function an MPS client with its catalog
  // model's share and demand (docs/demo.md "Co-running").
  bool corun = false;
  bool quick = false;
  bool real_gpu = false;
  std::string run_dir;                  // "" = a fresh one under $TMPDIR or /tmp
  std::string json_path;                // also write the JSON report here
  std::string build_dir;                // "" = the directory above gshare-demo's bin/
  double min_slo = 0;                   // exit 1 below this attainment (gshare run)
};

// The --quick settings (CI): 6 functions on 2 GPUs of 3 GiB (their quotas fit: no swapping
// needed), 40 s of trace at 2x: about a minute with the baseline.
void ApplyQuick(DemoOptions& o);

// The --real-gpu settings: SLOs for a real GPU's latencies (the samples take ~0.5-3 ms per
// request on an H200; the SLOs leave room for token waits and a swap-in) and, with --quick, a
// 1536 MiB slice of each GPU for the arbiter so the quotas (2.03 GiB) exceed it on one GPU.
void ApplyRealGpu(DemoOptions& o);

}  // namespace gshare::demo
