// DeadlineQueue: the arbiter's timed work in one min-heap, so the loop finds what is due and when
// to wake up next without scanning every client (docs/arbiter.md, "The loop"). Entries are
// (time, client id, kind); nothing is ever removed early: a client's state changes and removals
// make its older entries stale, and the loop checks each popped entry against the client before
// acting on it (lazy invalidation). Stale entries leave the heap when their time comes, so the
// heap holds at most the entries scheduled within the longest deadline still ahead.
//
// Thread-safety: plain values, used on the arbiter's loop only.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace gshare::arbiter {

class DeadlineQueue {
 public:
  enum class Kind : uint8_t {
    kDoorbellUnmute,  // a muted doorbell is watched again (DoorbellGuard::unmute_ns)
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
  // The earliest entry's time, UINT64_MAX when there is none.
  uint64_t NextNs() const { return heap_.empty() ? UINT64_MAX : heap_.top().at_ns; }
  // Removes and returns every entry due at now_ns, earliest first.
  std::vector<Entry> PopDue(uint64_t now_ns);
  size_t size() const { return heap_.size(); }

 private:
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

}  // namespace gshare::arbiter
