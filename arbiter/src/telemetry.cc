// Telemetry's small pieces of logic: histogram buckets and the utilisation window.
#include "telemetry.h"

namespace gshare::arbiter {

void Histogram::Observe(uint64_t ns) {
  const double s = static_cast<double>(ns) / 1e9;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (s <= kBounds[i]) {
      ++buckets_[i];
      break;
    }
  }
  ++count_;  // observations above the last bound are only in +Inf (the count)
  sum_s_ += s;
}

uint64_t Histogram::cumulative(size_t i) const {
  uint64_t n = 0;
  for (size_t k = 0; k <= i && k < buckets_.size(); ++k) n += buckets_[k];
  return n;
}

FunctionTelemetry& Telemetry::Function(const SeriesKey& key) {
  if (auto it = functions.find(key); it != functions.end()) return it->second;
  if (functions.size() >= kMaxFunctions) return functions[SeriesKey(kOtherFunction)];
  return functions[key];
}

void Telemetry::Prune(uint64_t now_ns) {
  const uint64_t from = now_ns > kHoldWindowNs ? now_ns - kHoldWindowNs : 0;
  for (auto& holds : recent)
    while (!holds.empty() && holds.front().end_ns < from) holds.pop_front();
}

}  // namespace gshare::arbiter
