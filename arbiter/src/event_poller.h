// EventPoller: the kernel objects the arbiter's loop waits on. An epoll set whose entries carry
// a 64-bit tag (the loop's dispatch key), a timerfd armed at an absolute CLOCK_MONOTONIC time, an
// eventfd that Wake() makes readable from any thread, and optionally a signalfd for SIGTERM and
// SIGINT (blocked in the calling thread, and so in the threads it starts later).
//
// Thread-safety: Wake() from any thread; everything else on the loop's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "gshare/common/status.h"
#include "gshare/shm/unique_fd.h"

namespace gshare::arbiter {

class EventPoller {
 public:
  // Where Wait reports the poller's own descriptors.
  struct Tags {
    uint64_t timer = 0;
    uint64_t wake = 0;
    uint64_t signal = 0;
  };

  // Creates the epoll set, the timer and the wake-up eventfd, and with `handle_signals` blocks
  // SIGTERM and SIGINT and watches them through a signalfd.
  Status Open(const Tags& tags, bool handle_signals);

  // Watches `fd` for input under `tag`; with `hangup`, for the peer's shutdown too.
  Status Add(int fd, uint64_t tag, bool hangup = false);
  // Stops watching `fd` (harmless if it is not watched).
  void Remove(int fd);
  // Keeps `fd` registered but reports it only while `readable` is true (a muted doorbell).
  Status Watch(int fd, uint64_t tag, bool readable);

  // The timer fires once at `at_ns` (CLOCK_MONOTONIC; a time already past fires at once);
  // UINT64_MAX disarms it.
  void ArmAt(uint64_t at_ns);
  // Makes the next (or current) Wait return with the wake tag.
  void Wake();

  // Blocks until something is ready; `tags` gets one entry per ready descriptor. The timer's
  // and the wake-up's counters are consumed here; an interrupted wait returns no tags.
  Status Wait(std::vector<uint64_t>& tags);
  // The signals received since the last call (SIGTERM, SIGINT), in order.
  std::vector<int> TakeSignals();

 private:
  Tags tags_;
  shm::UniqueFd epoll_;
  shm::UniqueFd timer_;
  shm::UniqueFd wake_;
  shm::UniqueFd signal_;
};

}  // namespace gshare::arbiter
