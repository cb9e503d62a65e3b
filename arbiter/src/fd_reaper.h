// FdReaper: destroys, on a thread of its own, objects whose destruction may block — above all
// file descriptors a peer could have chosen: a descriptor received over SCM_RIGHTS (a TCP socket
// with SO_LINGER and unsent data blocks close() for the linger time) and a connection socket
// whose queue may still hold such descriptors in flight (closing it drops their last reference
// in the closing thread). The arbiter's loop hands them here instead of closing them itself, so
// no peer can stall it by choosing what it closes (docs/security.md, "Nothing a peer sends can
// stall the loop"). On kernels with SO_PASSRIGHTS (Linux >= 6.16) the arbiter's sockets refuse
// descriptors outright; the reaper covers older kernels and everything else that may block.
//
// Ownership: the worker thread is detached and shares the queue with the reaper, so destroying
// the reaper never waits for a close that blocks (what is still queued is destroyed by the
// thread, which ends after the queue empties). Thread-safety: Dispose may be called from any
// thread.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "gshare/shm/unique_fd.h"

namespace gshare::arbiter {

class FdReaper {
 public:
  FdReaper();
  ~FdReaper();
  FdReaper(const FdReaper&) = delete;
  FdReaper& operator=(const FdReaper&) = delete;

  // Destroys `object` on the reaper's thread (any movable type: a UniqueFd, a connection).
  template <typename T>
  void Dispose(T&& object) {
    Enqueue(std::make_shared<std::remove_cvref_t<T>>(std::forward<T>(object)));
  }

  // Objects handed over so far, and how many of them the thread has destroyed.
  uint64_t disposed() const;
  uint64_t destroyed() const;

 private:
  struct Shared;
  void Enqueue(std::shared_ptr<void> object);
  std::shared_ptr<Shared> shared_;
};

}  // namespace gshare::arbiter
