// The co-running time model of MPS client kernels (see mps_kernel.h).
#include "mps_kernel.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "context.h"
#include "driver.h"
#include "mps_client.h"
#include "sim_clock.h"

namespace simcuda {

MpsDemand KernelDemand(const DeviceSpec& spec, const SimcudaLaunchDims& dims, double memory_ns,
                       double duration_ns) {
  const double blocks = static_cast<double>(dims.grid[0]) * dims.grid[1] * dims.grid[2];
  const double threads = static_cast<double>(dims.block[0]) * dims.block[1] * dims.block[2];
  double per_sm = std::clamp(std::floor(2048 / threads), 1.0, 32.0);
  if (dims.shared_mem_bytes > 0) {
    per_sm = std::clamp(std::min(per_sm, std::floor(233472.0 / dims.shared_mem_bytes)), 1.0, 32.0);
  }
  const double sms = std::max(1, spec.sm_count);
  MpsDemand demand;
  demand.sm = std::clamp(std::ceil(blocks / per_sm) / sms, 1e-6, 1.0);
  demand.bandwidth = duration_ns > 0 ? std::clamp(memory_ns / duration_ns, 0.0, 1.0) : 0.0;
  return demand;
}

uint64_t RunMpsKernel(CUctx_st* ctx, uint64_t start_ns, uint64_t work_ns, MpsDemand demand,
                      const std::function<void()>& run) {
  std::lock_guard<std::mutex> one_at_a_time(ctx->mps_kernel_mu);
  Registry& reg = *Driver()->registry;
  const int dev = ctx->device;
  const int slot = ctx->mps_slot;
  const double step = std::max(1.0, MpsStepNs());
  // The MPS server's kernels wait for the exclusive work (non-MPS processes) already reserved.
  uint64_t t = std::max(start_ns, reg.BusyUntil(dev, kComputeTimeline));
  if (t > SimNowNs()) SleepUntilSim(t);
  reg.MpsSetDemand(dev, slot, demand.sm, demand.bandwidth);
  reg.MpsExtendBusy(dev, t + static_cast<uint64_t>(step));
  run();
  double remaining = static_cast<double>(work_ns);
  uint64_t end = t;
  while (remaining > 0 && !reg.MpsFaulted(dev, slot)) {
    const double rate = std::max(1e-6, reg.MpsRate(dev, slot));
    const double need = remaining / rate;
    if (need <= step) {
      end = t + static_cast<uint64_t>(std::ceil(need));
      reg.MpsExtendBusy(dev, end);
      SleepUntilSim(end);
      break;
    }
    const uint64_t target = t + static_cast<uint64_t>(step);
    reg.MpsExtendBusy(dev, target);
    SleepUntilSim(target);
    const uint64_t now = std::max(SimNowNs(), target);
    remaining -= static_cast<double>(now - t) * rate;
    t = end = now;
  }
  reg.MpsSetDemand(dev, slot, 0, 0);
  return end;
}

}  // namespace simcuda
