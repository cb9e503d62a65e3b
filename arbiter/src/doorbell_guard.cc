// DoorbellGuard: the token bucket and flooding episodes (see doorbell_guard.h).
#include "doorbell_guard.h"

#include <algorithm>

namespace gshare::arbiter {

DoorbellGuard::DoorbellGuard(const DoorbellLimits& limits, uint64_t now_ns)
    : limits_(limits), refilled_ns_(now_ns) {
  if (limits_.rate_per_s == 0) return;
  burst_ = std::max<uint64_t>(1, limits_.rate_per_s / 10);
  // Half the bucket refills in burst / (2 rate) seconds; at least 1 ms.
  mute_ns_ = std::max<uint64_t>(1'000'000, burst_ * 500'000'000ULL / limits_.rate_per_s);
  tokens_ = static_cast<double>(burst_);
}

DoorbellGuard::Verdict DoorbellGuard::OnWake(uint64_t rings, uint64_t now_ns) {
  rings_ += rings;
  episode_began_ = false;
  if (limits_.rate_per_s == 0) return Verdict::kServe;
  if (now_ns > refilled_ns_) {
    const double gained =
        static_cast<double>(now_ns - refilled_ns_) * static_cast<double>(limits_.rate_per_s) / 1e9;
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + gained);
    refilled_ns_ = now_ns;
  }
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return Verdict::kServe;
  }
  ++mutes_;
  muted_ = true;
  unmute_ns_ = now_ns + mute_ns_;
  if (episode_start_ns_ == 0 || now_ns - last_mute_ns_ > kEpisodeGapNs + mute_ns_) {
    episode_start_ns_ = now_ns;
    episode_began_ = true;
  }
  last_mute_ns_ = now_ns;
  if (limits_.disconnect_after_ns != 0 && now_ns - episode_start_ns_ >= limits_.disconnect_after_ns)
    return Verdict::kDisconnect;
  return Verdict::kMute;
}

}  // namespace gshare::arbiter
