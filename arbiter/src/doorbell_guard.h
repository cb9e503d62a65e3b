// DoorbellGuard: per-client defence against doorbell flooding. A client's doorbell (an eventfd
// in the arbiter's epoll set) is meant to be rung only while the arbiter sleeps, once per
// report; a hostile or broken client can write it in a tight loop and make the arbiter spin.
// The guard is a token bucket over the wake-ups one client causes: within `rate` wake-ups a
// second (bursts up to a tenth of a second's worth) every wake-up is served; beyond it the
// client's doorbell is muted (removed from epoll's interest) for the time the bucket takes to
// refill half, during which the client is still served whenever the arbiter wakes for anything
// else or its timer, just not woken by that client. A client that keeps exceeding the rate for
// `disconnect_after` (a flooding episode: mutes with less than a second between them) is
// disconnected.
//
// Pure logic on the caller's clock (no fds, no syscalls): the event loop (arbiter_loop.cc)
// acts on the verdicts. Thread-safety: one thread per object (the arbiter's loop).
#pragma once

#include <cstdint>

namespace gshare::arbiter {

struct DoorbellLimits {
  uint64_t rate_per_s = 0;          // 0 = unlimited: every wake-up is served, nothing counted
  uint64_t disconnect_after_ns = 0; // 0 = never disconnect a flooder
};

class DoorbellGuard {
 public:
  enum class Verdict : uint8_t {
    kServe,       // handle the wake-up as usual
    kMute,        // stop watching the doorbell until unmute_ns()
    kDisconnect,  // flooded for longer than disconnect_after: remove the client
  };
  // A new flooding episode starts after this long without a mute.
  static constexpr uint64_t kEpisodeGapNs = 1'000'000'000ULL;

  DoorbellGuard() = default;
  DoorbellGuard(const DoorbellLimits& limits, uint64_t now_ns);

  // The doorbell woke the arbiter at `now_ns`; it had been rung `rings` times since the last
  // drain. Precondition: not muted (a muted doorbell is not watched).
  Verdict OnWake(uint64_t rings, uint64_t now_ns);
  // The loop watches the doorbell again (call at or after unmute_ns()).
  void Unmute() { muted_ = false; }

  bool muted() const { return muted_; }
  uint64_t unmute_ns() const { return unmute_ns_; }
  // Whether the last kMute began a new flooding episode (log it then, not at every mute).
  bool episode_began() const { return episode_began_; }
  // Since when the current episode lasts (0: none yet).
  uint64_t episode_start_ns() const { return episode_start_ns_; }
  uint64_t rings() const { return rings_; }
  uint64_t mutes() const { return mutes_; }
  uint64_t burst() const { return burst_; }
  uint64_t mute_ns() const { return mute_ns_; }

 private:
  DoorbellLimits limits_;
  uint64_t burst_ = 1;      // bucket capacity (wake-ups)
  uint64_t mute_ns_ = 0;    // how long a mute lasts: the time to refill half the bucket
  double tokens_ = 0;
  uint64_t refilled_ns_ = 0;
  bool muted_ = false;
  uint64_t unmute_ns_ = 0;
  uint64_t last_mute_ns_ = 0;
  uint64_t episode_start_ns_ = 0;
  bool episode_began_ = false;
  uint64_t rings_ = 0;
  uint64_t mutes_ = 0;
};

}  // namespace gshare::arbiter
