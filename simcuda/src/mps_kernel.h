// The co-running time model of MPS client kernels: a kernel's demand (the fraction of the SMs
// and of the memory bandwidth it would use alone) from its launch geometry and cost, and the
// processor-sharing run that advances its work at the rate the registry computes from every
// running kernel of the device (docs/simcuda.md "MPS mode" has the equations).
// Thread-safety: thread-safe; kernels of one context run one at a time.
#ifndef SIMCUDA_SRC_MPS_KERNEL_H_
#define SIMCUDA_SRC_MPS_KERNEL_H_

#include <cstdint>
#include <functional>

#include "api.h"
#include "config.h"
#include "simcuda/kernel_plugin.h"

namespace simcuda {

struct MpsDemand {
  double sm;         // d: SMs the kernel's blocks can occupy at once / SMs of the device, (0, 1]
  double bandwidth;  // b: memory time / duration alone, [0, 1]
};

// d = min(1, ceil(blocks / blocks_per_sm) / sms), blocks_per_sm = clamp(2048 / threads per
// block, 1, 32) (and by shared memory: 228 KiB per SM); b = memory_ns / duration_ns.
MpsDemand KernelDemand(const DeviceSpec& spec, const SimcudaLaunchDims& dims, double memory_ns,
                       double duration_ns);

// Runs a kernel of MPS client context `ctx` on its stream's worker: starts at `start_ns` once the
// exclusive work reserved on the device's compute timeline is done, runs the CPU twin (`run`),
// then advances `work_ns` (its duration alone at share 100%) in steps at the co-running rate,
// sleeping between them. Returns the simulated end. A fatal fault of the server ends it early.
uint64_t RunMpsKernel(CUctx_st* ctx, uint64_t start_ns, uint64_t work_ns, MpsDemand demand,
                      const std::function<void()>& run);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_MPS_KERNEL_H_
