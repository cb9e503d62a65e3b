// FairMutex: a FIFO (ticket) mutex. Threads acquire it in the order they asked for it, so a
// thread that runs long critical sections back to back (the swap engine: a swap-out immediately
// followed by a swap-in) cannot starve the threads waiting between them (allocations and frees
// queue behind at most the swap that holds the lock when they arrive).
//
// Meets BasicLockable (std::lock_guard<FairMutex>). Not recursive. Thread-safety: all methods.
// Cost: one std::mutex round trip plus a condition-variable wake when contended; uncontended it
// takes and drops the inner mutex twice (lock and unlock).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace gshare::memory {

class FairMutex {
 public:
  void lock() {
    std::unique_lock<std::mutex> inner(mu_);
    const uint64_t ticket = next_ticket_++;
    turn_.wait(inner, [&] { return now_serving_ == ticket; });
  }
  void unlock() {
    {
      std::lock_guard<std::mutex> inner(mu_);
      ++now_serving_;
    }
    turn_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable turn_;
  uint64_t next_ticket_ = 0;  // guarded by mu_
  uint64_t now_serving_ = 0;  // guarded by mu_
};

}  // namespace gshare::memory
