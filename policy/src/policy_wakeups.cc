// PolicyBase's wakeups: per-function and per-GPU timers in one heap of slots, superseded
// entries dropped lazily (see policy_base.h for the invariants).
#include "policy_base.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <utility>

namespace gshare::policy::internal {

void PolicyBase::WakeAt(Time t, FunctionId f, uint32_t tag) { Arm(t, f, tag, /*gpu=*/false); }

void PolicyBase::WakeGpuAt(Time t, GpuId g, uint32_t tag) { Arm(t, g, tag, /*gpu=*/true); }

void PolicyBase::CancelGpuWake(GpuId g, uint32_t tag) {
  WakeSlot* slot = SlotOf(g, tag, /*gpu=*/true);
  if (slot == nullptr || !slot->armed) return;
  ++stale_;
  slot->armed = false;
  ++slot->seq;
}

PolicyBase::WakeSlot* PolicyBase::SlotOf(FunctionId key, uint32_t tag, bool gpu) {
  return const_cast<WakeSlot*>(std::as_const(*this).SlotOf(Wake{0, key, tag, 0, gpu}));
}

const PolicyBase::WakeSlot* PolicyBase::SlotOf(const Wake& w) const {
  const std::vector<WakeSlot>& slots = w.gpu ? gpu_slots_ : fn_slots_;
  const size_t i = static_cast<size_t>(w.f) * kWakeTags + w.tag;
  return w.f == kNoFunction || i >= slots.size() ? nullptr : &slots[i];
}

void PolicyBase::Arm(Time t, FunctionId key, uint32_t tag, bool gpu) {
  assert(tag < kWakeTags);
  WakeSlot* slot = SlotOf(key, tag, gpu);
  uint32_t seq = 0;
  if (slot != nullptr) {
    if (slot->armed) ++stale_;  // the pending one is superseded
    slot->armed = true;
    seq = ++slot->seq;
  }
  PushWake(Wake{t, key, tag, seq, gpu});
}

void PolicyBase::PushWake(const Wake& w) {
  wakes_.push_back(w);
  std::push_heap(wakes_.begin(), wakes_.end(), std::greater<>());
  // Drop the superseded wakeups once they are more than half of the heap: it stays within
  // twice the armed slots (or kMinCompact), however many bursts re-arm the same slots and
  // however many functions have come and gone. Amortised O(1) per push.
  if (wakes_.size() < kMinCompact || 2 * stale_ <= wakes_.size()) return;
  std::erase_if(wakes_, [this](const Wake& x) { return Stale(x); });
  std::make_heap(wakes_.begin(), wakes_.end(), std::greater<>());
  stale_ = 0;
}

void PolicyBase::DropStaleFront() {
  while (!wakes_.empty() && Stale(wakes_.front())) {
    std::pop_heap(wakes_.begin(), wakes_.end(), std::greater<>());
    wakes_.pop_back();
    --stale_;
  }
}

void PolicyBase::FireTimers(Time now) {
  DropStaleFront();
  while (!wakes_.empty() && wakes_.front().at <= now) {
    std::pop_heap(wakes_.begin(), wakes_.end(), std::greater<>());
    const Wake w = wakes_.back();
    wakes_.pop_back();
    if (Stale(w)) {
      --stale_;
      continue;
    }
    if (WakeSlot* slot = SlotOf(w.f, w.tag, w.gpu)) slot->armed = false;
    OnWake(now, w.f, w.tag);
    DropStaleFront();
  }
}

}  // namespace gshare::policy::internal
