// Judging a co-run burst against the function's solo bursts (see corun_judge.h).
#include "corun_judge.h"

#include <algorithm>
#include <vector>

namespace gshare::arbiter {

void SoloReference::AddSolo(uint64_t gpu_time_ns) {
  ring_[next_] = gpu_time_ns;
  next_ = (next_ + 1) % kKept;
  count_ = std::min(count_ + 1, kKept);
  corun_since_solo_ = 0;
}

std::optional<uint64_t> SoloReference::Typical() const {
  if (count_ == 0) return std::nullopt;
  std::vector<uint64_t> kept(ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(count_));
  const auto quartile = kept.begin() + static_cast<std::ptrdiff_t>((count_ - 1) / 4);
  std::nth_element(kept.begin(), quartile, kept.end());
  return *quartile;
}

CorunVerdict JudgeCorunBurst(uint64_t latency_ns, uint64_t gpu_time_ns,
                             std::optional<uint64_t> typical_ns, uint32_t slo_ms,
                             uint32_t threat_percent, uint64_t members) {
  const uint64_t slo_ns = uint64_t{slo_ms} * 1'000'000;
  // latency > slo * threat / 100, in integers.
  if (latency_ns * 100 <= slo_ns * threat_percent) return CorunVerdict::kFine;
  if (!typical_ns) return CorunVerdict::kNoReference;
  if (gpu_time_ns / kMaxSlowdownPerMember / std::max<uint64_t>(members, 1) > *typical_ns)
    return CorunVerdict::kUnlike;
  const uint64_t added = gpu_time_ns > *typical_ns ? gpu_time_ns - *typical_ns : 0;
  return added * 100 > slo_ns * kCorunCostPercent ? CorunVerdict::kThreatened
                                                  : CorunVerdict::kFine;
}

}  // namespace gshare::arbiter
