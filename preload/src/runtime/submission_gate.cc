// SubmissionGate's slow paths (see submission_gate.h).
#include "runtime/submission_gate.h"

#include <sched.h>

namespace gshare::preload {

unsigned SubmissionGate::AssignThreadSlot() {
  static std::atomic<unsigned> next{0};
  const unsigned slot = next.fetch_add(1, std::memory_order_relaxed) % kSlots;
  ThisThread().gate_slot = slot + 1;
  return slot;
}

void SubmissionGate::Close() {
  {
    MutexLock lock(mutex_);
    closed_.store(true, std::memory_order_seq_cst);
  }
  // Submitters inside are in the middle of one driver call: they leave soon.
  for (Slot& slot : slots_) {
    while (slot.active.load(std::memory_order_acquire) != 0) sched_yield();
  }
}

void SubmissionGate::Open() {
  {
    MutexLock lock(mutex_);
    closed_.store(false, std::memory_order_seq_cst);
  }
  opened_.NotifyAll();
}

void SubmissionGate::WaitOpen() {
  MutexLock lock(mutex_);
  opened_.Wait(mutex_, [this] { return !closed_.load(std::memory_order_acquire); });
}

bool SubmissionGate::TakeActivity() {
  bool active = false;
  for (Slot& slot : slots_) {
    if (slot.touched.load(std::memory_order_relaxed)) {
      slot.touched.store(false, std::memory_order_relaxed);
      active = true;
    }
    if (slot.active.load(std::memory_order_acquire) != 0) active = true;
  }
  return active;
}

}  // namespace gshare::preload
