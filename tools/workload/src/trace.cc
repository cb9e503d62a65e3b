// Implementation of trace.h: names of arrival kinds and per-function statistics.
#include "gshare/workload/trace.h"

#include <cmath>

namespace gshare::workload {

const char* ArrivalKindName(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kUnknown: return "unknown";
    case ArrivalKind::kTimer: return "timer";
    case ArrivalKind::kPoisson: return "poisson";
    case ArrivalKind::kBursty: return "bursty";
    case ArrivalKind::kOther: return "other";
  }
  return "invalid";
}

int64_t Trace::SpanUs() const {
  if (invocations.size() < 2) return 0;
  return invocations.back().arrival_us - invocations.front().arrival_us;
}

std::vector<FunctionStats> ComputeFunctionStats(const Trace& trace) {
  const size_t n = trace.functions.size();
  std::vector<FunctionStats> stats(n);
  std::vector<int64_t> last(n, 0);
  // Welford's running mean and variance of the gaps, per function.
  std::vector<double> mean(n, 0), m2(n, 0);
  std::vector<uint64_t> gaps(n, 0);
  for (const Invocation& inv : trace.invocations) {
    const uint32_t f = inv.function;
    if (stats[f].invocations++ > 0) {
      const double gap = static_cast<double>(inv.arrival_us - last[f]);
      const double delta = gap - mean[f];
      mean[f] += delta / static_cast<double>(++gaps[f]);
      m2[f] += delta * (gap - mean[f]);
    }
    last[f] = inv.arrival_us;
  }
  for (size_t f = 0; f < n; ++f) {
    if (gaps[f] >= 1) stats[f].mean_gap_us = mean[f];
    if (gaps[f] >= 2 && mean[f] > 0) {
      stats[f].gap_cv = std::sqrt(m2[f] / static_cast<double>(gaps[f] - 1)) / mean[f];
    }
  }
  return stats;
}

}  // namespace gshare::workload
