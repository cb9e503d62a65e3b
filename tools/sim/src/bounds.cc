// Lower bounds of a workload's GPU time (see bounds.h).
#include "gshare/sim/bounds.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace gshare::sim {

WorkloadBounds ComputeBounds(const SimWorkload& workload, const policy::GpuSpec& gpu) {
  using policy::Residency;
  struct Last {
    bool seen = false;
    bool feasible = false;  // could be on time (judged on a dedicated resident GPU)
    Time arrival = 0;
    Time dedicated_end = 0;
  };
  const size_t n = workload.functions.size();
  std::vector<Last> last(n);
  std::vector<bool> unswappable(n, false);
  double busy_us = 0, held = 0, hold_only = 0;  // held and hold_only in byte-microseconds
  constexpr double kAny = std::numeric_limits<double>::infinity();
  for (const SimRequest& r : workload.requests) {
    const policy::FunctionSpec& spec = workload.functions[r.function];
    Last& l = last[r.function];
    const auto fp = static_cast<double>(policy::FootprintBytes(spec, Residency::kResident));
    const auto ctx = static_cast<double>(spec.context_bytes);
    const auto restore = static_cast<double>(
        policy::SwapInCost(spec, Residency::kHost, policy::kNoGpu, 0, gpu).time);
    const auto weights_in =
        static_cast<double>(policy::SwapInCost(spec, Residency::kParked, 0, 0, gpu).time);
    const Time dedicated_end = std::max(l.seen ? l.dedicated_end : 0, r.arrival) + r.exec;
    const bool feasible = dedicated_end - r.arrival <= spec.slo;
    // How late after its arrival it may start and still be on time.
    const double slack = feasible ? static_cast<double>(spec.slo - r.exec) : kAny;
    double cost = fp * restore;  // the first request: a restore from the host
    if (l.seen) {
      const double gap =
          l.feasible ? static_cast<double>(std::max<Time>(0, r.arrival - (l.arrival + spec.slo))) : 0.0;
      cost = fp * gap;  // staying resident
      if (weights_in <= gap + slack) cost = std::min(cost, ctx * std::max(0.0, gap - weights_in) + fp * weights_in);
      if (restore <= gap + slack) cost = std::min(cost, fp * restore);
      hold_only += cost;
    }
    if (feasible && restore > slack) unswappable[r.function] = true;
    held += cost + fp * static_cast<double>(r.exec);
    busy_us += static_cast<double>(r.exec);
    l = Last{true, feasible, r.arrival, dedicated_end};
  }
  WorkloadBounds b;
  const double per_gpu = static_cast<double>(gpu.memory_bytes) * policy::kUsPerSecond;
  b.busy_seconds = busy_us / policy::kUsPerSecond;
  b.memory_seconds = held / per_gpu;
  b.hold_seconds = hold_only / per_gpu;
  b.lower_bound_seconds = std::max(b.busy_seconds, b.memory_seconds);
  b.unswappable_functions = static_cast<uint64_t>(std::count(unswappable.begin(), unswappable.end(), true));
  return b;
}

}  // namespace gshare::sim
