// SubmissionGate: admits work-submitting driver calls while the vGPU is resident and stops them
// while it is being swapped (or is swapped out).
//
// Invariants:
//   1. A submitter is "inside" between a successful TryEnter and its Exit; `active_` counts them.
//   2. Close() sets `closed_` and then waits for `active_` to reach zero; because TryEnter
//      increments `active_` before reading `closed_` (both sequentially consistent), no
//      submitter can be inside after Close() returns until Open() is called.
//   3. While closed, TryEnter fails; the caller then waits in WaitOpen() (mutex + condition
//      variable, the slow path) or resolves the closure itself (auto swap-in).
//
// Fast path (open gate): one atomic increment, one atomic load, one atomic decrement; no
// syscalls, no locks.
//
// Thread-safety: all methods are thread-safe. Close/Open are called by one controller at a time
// (the runtime's swap mutex serialises them).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace gshare::preload {

class SubmissionGate {
 public:
  // True: the caller is inside and must call Exit(). False: the gate is closed; nothing to undo.
  bool TryEnter() {
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (!closed_.load(std::memory_order_seq_cst)) return true;
    Exit();
    return false;
  }
  void Exit() { active_.fetch_sub(1, std::memory_order_release); }

  // Stops new submissions and waits until every admitted one has returned.
  // REQUIRES: the caller is not itself inside the gate.
  void Close();
  // Admits submissions again and wakes the waiters.
  void Open();
  // Blocks until the gate is open (returns at once when it is).
  void WaitOpen();
  [[nodiscard]] bool closed() const { return closed_.load(std::memory_order_acquire); }

 private:
  std::atomic<uint64_t> active_{0};
  std::atomic<bool> closed_{false};
  std::mutex mutex_;
  std::condition_variable opened_;
};

}  // namespace gshare::preload
