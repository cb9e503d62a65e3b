// DeadlineQueue: the arbiter's timed work in one min-heap, so the loop finds what is due and when
// to wake up next without scanning every client (docs/arbiter.md, "The loop"). Entries are
// (time, client id, kind); nothing is ever removed early: a client's state changes and removals
// make its older entries stale, and the loop checks each popped entry against the client before
// acting on it (lazy invalidation). Stale entries leave the heap when their time comes.
//
// Each client keeps ClientMarks, one pair per kind: the time of its live entry and the last
// deadline served. Want() pushes an entry only when the client's deadline is earlier than its
// live entry (an earlier entry is kept: when it comes, the caller finds the deadline later and
// wants it again), and never for a deadline already served, so a client has at most one live
// entry per kind and a deadline that moves later with every use (deep eviction's idle time)
// costs no push at all until its entry comes.
//
// Thread-safety: plain values, used on the arbiter's loop only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace gshare::arbiter {

class DeadlineQueue {
 public:
  enum class Kind : uint8_t {
    kDoorbellUnmute,   // a muted doorbell is watched again (DoorbellGuard::unmute_ns; no marks)
    kOrderDeadline,    // a swap order not acknowledged in time (ArbiterImpl::OrderDeadlineNs)
    kDeepEvict,        // an idle resident vGPU is checkpointed (deep_evict_after)
    kSliceEnd,         // a holder's slice ends (a wake-up: CheckSlices preempts it)
    kPreemptGrace,     // a preempted holder's grace ends (a wake-up: CheckSlices enforces)
    kTransferBackOff,  // a retried swap-in may go out (a wake-up: PumpTransfers issues it)
    kChannelBusy,      // a channel caught mid-write is read again (a wake-up: PollAll reads it)
  };
  static constexpr size_t kKinds = static_cast<size_t>(Kind::kChannelBusy) + 1;
  // A client's entries, by kind: the live entry's time and the last deadline served
  // (UINT64_MAX: none).
  struct ClientMarks {
    ClientMarks() {
      queued.fill(UINT64_MAX);
      served.fill(UINT64_MAX);
    }
    std::array<uint64_t, kKinds> queued;
    std::array<uint64_t, kKinds> served;
  };
  struct Entry {
    uint64_t at_ns = 0;
    uint32_t client_id = 0;
    Kind kind = Kind::kDoorbellUnmute;
    bool operator>(const Entry& o) const {
      if (at_ns != o.at_ns) return at_ns > o.at_ns;
      if (client_id != o.client_id) return client_id > o.client_id;
      return kind > o.kind;
    }
  };

  void Schedule(uint64_t at_ns, uint32_t client_id, Kind kind) {
    heap_.push(Entry{at_ns, client_id, kind});
  }
  // Keeps a live entry for the client's deadline of `kind` at or before `at_ns` (UINT64_MAX: it
  // has none): pushes one when there is none that early and `at_ns` is not a deadline already
  // served (Served).
  void Want(ClientMarks& marks, uint32_t client_id, Kind kind, uint64_t at_ns) {
    const auto k = static_cast<size_t>(kind);
    if (at_ns == UINT64_MAX || at_ns == marks.served[k] || marks.queued[k] <= at_ns) return;
    marks.queued[k] = at_ns;
    Schedule(at_ns, client_id, kind);
  }
  // True when `e`, just popped, is its client's live entry (`marks`: that client's); the client
  // then has none of that kind until it wants one again.
  static bool Claim(ClientMarks& marks, const Entry& e) {
    const auto k = static_cast<size_t>(e.kind);
    if (marks.queued[k] != e.at_ns) return false;
    marks.queued[k] = UINT64_MAX;
    return true;
  }
  // The client's deadline of `kind` at `at_ns` came and was acted on: not scheduled again.
  static void Served(ClientMarks& marks, Kind kind, uint64_t at_ns) {
    marks.served[static_cast<size_t>(kind)] = at_ns;
  }
  // The earliest entry's time, UINT64_MAX when there is none.
  uint64_t NextNs() const { return heap_.empty() ? UINT64_MAX : heap_.top().at_ns; }
  // Removes and returns every entry due at now_ns, earliest first.
  std::vector<Entry> PopDue(uint64_t now_ns);
  size_t size() const { return heap_.size(); }

 private:
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

}  // namespace gshare::arbiter
