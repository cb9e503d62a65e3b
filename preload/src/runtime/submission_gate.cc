// SubmissionGate's slow paths (see submission_gate.h).
#include "runtime/submission_gate.h"

#include <sched.h>

namespace gshare::preload {

unsigned SubmissionGate::NextSlot() {
  static std::atomic<unsigned> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) % kSlots;
}

void SubmissionGate::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_.store(true, std::memory_order_seq_cst);
  }
  // Submitters inside are in the middle of one driver call: they leave soon.
  for (Slot& slot : slots_) {
    while (slot.active.load(std::memory_order_acquire) != 0) sched_yield();
  }
}

void SubmissionGate::Open() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_.store(false, std::memory_order_seq_cst);
  }
  opened_.notify_all();
}

void SubmissionGate::WaitOpen() {
  std::unique_lock<std::mutex> lock(mutex_);
  opened_.wait(lock, [this] { return !closed_.load(std::memory_order_acquire); });
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
