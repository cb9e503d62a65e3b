// FairMutex: a FIFO (ticket) mutex. Threads acquire it in the order they asked for it, so a
// thread that runs long critical sections back to back (the swap engine: a swap-out immediately
// followed by a swap-in) cannot starve the threads waiting between them (allocations and frees
// queue behind at most the swap that holds the lock when they arrive).
//
// Meets BasicLockable; an annotated capability (gshare/common/thread_annotations.h): hold it
// with FairMutexLock so clang's -Wthread-safety sees it. Not recursive. Thread-safety: all
// methods. Cost: one std::mutex round trip plus a condition-variable wake when contended;
// uncontended it takes and drops the inner mutex twice (lock and unlock). The inner mutex is a
// leaf: held only inside lock() and unlock().
#pragma once

#include <cstdint>

#include "gshare/common/thread_annotations.h"

namespace gshare::memory {

class CAPABILITY("mutex") FairMutex {
 public:
  void lock() ACQUIRE() {
    MutexLock inner(mu_);
    const uint64_t ticket = next_ticket_++;
    turn_.Wait(mu_, [&]() REQUIRES(mu_) { return now_serving_ == ticket; });
  }
  void unlock() RELEASE() {
    {
      MutexLock inner(mu_);
      ++now_serving_;
    }
    turn_.NotifyAll();
  }

 private:
  Mutex mu_;
  CondVar turn_;
  uint64_t next_ticket_ GUARDED_BY(mu_) = 0;
  uint64_t now_serving_ GUARDED_BY(mu_) = 0;
};

// std::lock_guard<FairMutex>, visible to the analysis.
class SCOPED_CAPABILITY FairMutexLock {
 public:
  explicit FairMutexLock(FairMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~FairMutexLock() RELEASE() { mu_.unlock(); }
  FairMutexLock(const FairMutexLock&) = delete;
  FairMutexLock& operator=(const FairMutexLock&) = delete;

 private:
  FairMutex& mu_;
};

}  // namespace gshare::memory
