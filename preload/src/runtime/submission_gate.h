// SubmissionGate: admits work-submitting driver calls while the vGPU is resident and stops them
// while it is being swapped (or is swapped out).
//
// Invariants:
//   1. A submitter is "inside" between a successful TryEnter and its Exit; the sum of the
//      per-slot `active` counters counts them (a thread always uses the same slot, so threads
//      submitting concurrently touch different cache lines).
//   2. Close() sets `closed_` and then waits for every slot to reach zero; because TryEnter
//      increments its slot before reading `closed_` (both sequentially consistent), no
//      submitter can be inside after Close() returns until Open() is called.
//   3. While closed, TryEnter fails; the caller then waits in WaitOpen() (mutex + condition
//      variable, the slow path) or resolves the closure itself (auto swap-in).
//   4. `mutex_` only orders Close/Open's store of `closed_` with WaitOpen's check (no lost
//      wake-up); it is a leaf (nothing else is taken while it is held).
//
// Fast path (open gate): one atomic increment, one atomic load, one atomic decrement on the
// calling thread's slot; no syscalls, no locks.
//
// Thread-safety: all methods are thread-safe. Close/Open are called by one controller at a time
// (the runtime's swap mutex serialises them).
#pragma once

#include <atomic>
#include <cstdint>

#include "gshare/common/thread_annotations.h"
#include "runtime/thread_state.h"

namespace gshare::preload {

class SubmissionGate {
 public:
  // True: the caller is inside and must call Exit(*slot). False: the gate is closed; nothing
  // to undo.
  __attribute__((always_inline)) bool TryEnter(unsigned* slot) {
    *slot = ThreadSlot();
    return TryEnterSlot(*slot);
  }
  // TryEnter for a caller that already knows its thread's slot (ThisThread().gate_slot - 1).
  __attribute__((always_inline)) bool TryEnterSlot(unsigned slot) {
    Slot& s = slots_[slot];
    s.active.fetch_add(1, std::memory_order_seq_cst);
    if (!closed_.load(std::memory_order_seq_cst)) [[likely]] {
      // Activity mark for the arbiter client's idle detection: a plain store, no RMW, on the
      // slot's own cache line (already owned after the increment above).
      s.touched.store(true, std::memory_order_relaxed);
      return true;
    }
    s.active.fetch_sub(1, std::memory_order_release);
    return false;
  }
  void Exit(unsigned slot) { slots_[slot].active.fetch_sub(1, std::memory_order_release); }

  // Stops new submissions and waits until every admitted one has returned.
  // REQUIRES: the caller is not itself inside the gate.
  void Close() EXCLUDES(mutex_);
  // Admits submissions again and wakes the waiters.
  void Open() EXCLUDES(mutex_);
  // Blocks until the gate is open (returns at once when it is).
  void WaitOpen() EXCLUDES(mutex_);
  [[nodiscard]] bool closed() const { return closed_.load(std::memory_order_acquire); }
  // True if a submission was admitted since the previous call (clears the marks) or one is
  // inside now. For the arbiter client's idle detection (one caller at a time).
  bool TakeActivity();

 private:
  static constexpr unsigned kSlots = 16;
  struct alignas(64) Slot {
    std::atomic<uint64_t> active{0};
    std::atomic<bool> touched{false};  // set by TryEnter, cleared by TakeActivity
  };
  // The calling thread's slot, assigned round-robin on its first submission (ThreadState: one
  // initial-exec TLS block with the in-flight tracker's cache). The fast path only loads; the
  // first submission's assignment and store are out of line (AssignThreadSlot). Not only for
  // size: GCC 12 with -fsanitize=null compiled an inline "call, then store to the TLS slot" with
  // the store's null check dropped and its `je` left on the flags the call returned with, so
  // UBSan reported a store to a null pointer whenever the slot assigned was 0
  // (SubmissionGate.CloseWaitsForSubmittersInside in the ASan + UBSan build).
  static unsigned ThreadSlot() {
    const unsigned slot = ThisThread().gate_slot;
    if (slot == 0) [[unlikely]] return AssignThreadSlot();
    return slot - 1;
  }
  // Takes the next slot round-robin for the calling thread, records it in its ThreadState and
  // returns it.
  static unsigned AssignThreadSlot();

  Slot slots_[kSlots];
  alignas(64) std::atomic<bool> closed_{false};
  Mutex mutex_;  // leaf; guards no data (closed_ is atomic): see invariant 4
  CondVar opened_;
};

}  // namespace gshare::preload
