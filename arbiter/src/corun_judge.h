// Judging a co-run burst (docs/arbiter.md, "Revocation"): did co-running threaten this burst's
// SLO? A burst's latency alone cannot say: a server's first bursts (its context, the upload of
// its weights) take seconds whatever runs beside them, and revoking a set for them sent the
// demo's co-run GPU back to exclusive slices before its servers were ready. So a burst counts
// against co-running only when its latency passes the threat (corun_threat percent of its SLO)
// *and* it held the GPU longer than the function's typical solo burst by more than
// kCorunCostPercent of its SLO: the time co-running added. A burst more than
// kMaxSlowdownPerMember x the set's size times its reference is other work than the reference
// (a server's next load after a short first burst: 1,726 ms against 96 ms, cnn's 190 ms against
// 1 ms in the demo), not what co-running did (beside n members a kernel gets no less than about
// 1/n of the GPU's memory bandwidth, its share of SMs being its own alone too): it is not judged,
// and the function runs its next burst alone for a fresh reference. So a function co-runs only once it
// has run a burst alone (the join rules, CorunBook::JoinRefusal: a server's loads run alone),
// and runs one alone again every kSoloRefreshBursts co-run bursts, so that its reference follows
// its work. (The policy's own revocation, SlackScheduler::OnCorunBurstEnd, judges by the same
// stretch.)
//
// Thread-safety: plain values, used on the arbiter's loop only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace gshare::arbiter {

// A function's recent solo (exclusive) bursts' GPU times, and how many co-run bursts it has run
// since the newest of them.
class SoloReference {
 public:
  static constexpr size_t kKept = 8;
  // Co-run bursts after which a function runs one burst alone again.
  static constexpr uint32_t kSoloRefreshBursts = 16;

  void AddSolo(uint64_t gpu_time_ns);
  void AddCorun() { ++corun_since_solo_; }
  // Its last co-run burst was other work than its reference (kUnlike): its next runs alone.
  void Refresh() { corun_since_solo_ = kSoloRefreshBursts; }
  // The reference solo burst: the lower quartile of the kept ones (a reference too high hides
  // what co-running adds; the first bursts, a server's loads, are its longest); none when no
  // solo burst was seen.
  std::optional<uint64_t> Typical() const;
  // It must run its next burst alone: no solo burst yet, or kSoloRefreshBursts co-run bursts
  // since the last one.
  bool needs_solo() const { return count_ == 0 || corun_since_solo_ >= kSoloRefreshBursts; }
  size_t count() const { return count_; }

 private:
  std::array<uint64_t, kKept> ring_{};
  size_t count_ = 0;  // kept (<= kKept)
  size_t next_ = 0;
  uint32_t corun_since_solo_ = 0;
};

enum class CorunVerdict : uint8_t {
  kFine,         // within the threat, or the excess is the function's own work
  kThreatened,   // over the threat, and co-running added more than kCorunCostPercent of the SLO
  kNoReference,  // over the threat with no solo burst to judge by
  kUnlike,       // over the threat, but too long for co-running to explain: other work
};

// The most a co-run burst may be slowed per member of its set (itself included) and still be
// taken for the work of its solo reference.
inline constexpr uint64_t kMaxSlowdownPerMember = 2;

// What co-running may add to a burst before it counts against it, in percent of the SLO (the
// policy's kCorunCost).
inline constexpr uint64_t kCorunCostPercent = 5;

// The verdict on a co-run burst of `latency_ns` (its start to its end, waits included) that held
// the GPU `gpu_time_ns` in a set of `members` (itself included), for a function with SLO
// `slo_ms`, solo reference `typical_ns`, under corun_threat `threat_percent`.
CorunVerdict JudgeCorunBurst(uint64_t latency_ns, uint64_t gpu_time_ns,
                             std::optional<uint64_t> typical_ns, uint32_t slo_ms,
                             uint32_t threat_percent, uint64_t members);

}  // namespace gshare::arbiter
