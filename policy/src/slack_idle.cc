// The slack scheduler's idle functions: the steps an idle function takes (parked, then
// deep-evicted) and the prefetch of periodic functions ahead of their next arrival.
#include "slack_scheduler.h"

#include <algorithm>

namespace gshare::policy::internal {

void SlackScheduler::ArmIdle(Time at, FunctionId f) {
  if (at >= fns_[f].idle_wake) return;
  fns_[f].idle_wake = at;
  WakeAt(at, f, kTagIdle);
}

Duration SlackScheduler::ParkAfter(FunctionId f) const {
  const Fn& fn = fns_[f];
  if (fn.arrivals.gaps() == 0) return 10 * kUsPerSecond;
  return std::clamp<Duration>(static_cast<Duration>(2 * fn.arrivals.MeanGap()), kUsPerSecond,
                              60 * kUsPerSecond);
}

Duration SlackScheduler::DeepAfter(FunctionId f) const {
  if (!opt_.deep_evict) return DeepSafe(f) ? kShareIdleTtl : config_.keepalive_ttl;
  return DeepSafe(f) ? ParkAfter(f) + 10 * kUsPerSecond : config_.keepalive_ttl;
}

Duration SlackScheduler::FirstIdleStep(FunctionId f) const {
  return opt_.deep_evict ? ParkAfter(f) : DeepAfter(f);
}

void SlackScheduler::IdleStep(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  if (!fn.idle() || fn.queued || fn.waiting || fn.where == Residency::kHost ||
      gpus_[fn.gpu].tenant == f || !Movable(f)) {
    return;  // (pinned to its GPU: it stays resident, no idle wakeups again)
  }
  const Duration idle_for = now - fn.last_use;
  if (idle_for >= DeepAfter(f)) return DeepEvict(now, f);
  if (opt_.deep_evict && fn.where == Residency::kResident && idle_for >= ParkAfter(f) &&
      ParkSafe(f)) {
    if (fn.pinned) Pin(f, false);
    SwapOut(now, f);
  }
  const Duration next = (opt_.deep_evict && fn.where == Residency::kResident && idle_for < ParkAfter(f))
                            ? ParkAfter(f)
                            : DeepAfter(f);
  ArmIdle(fn.last_use + next, f);
}

void SlackScheduler::OnWake(Time now, FunctionId f, uint32_t tag) {
  switch (tag) {
    case kTagSlack: {
      Fn& fn = fns_[f];
      if (!fn.waiting || fn.held) return;
      fn.waiting = false;
      if (fn.pending.empty() || fn.transfer) return;
      if (fn.where == Residency::kResident) return Enqueue(now, f, fn.gpu);
      return PlaceNow(now, f, fn.deadline());
    }
    case kTagIdle:
      if (now >= fns_[f].idle_wake) fns_[f].idle_wake = kNever;
      return IdleStep(now, f);
    case kTagPrefetch: {
      Fn& fn = fns_[f];
      if (fn.where != Residency::kHost || fn.transfer || fn.waiting || !fn.pending.empty()) return;
      return PlaceNow(now, f, fn.arrivals.NextArrival() + fn.spec.slo);
    }
    case kTagScale:
      Consolidate(now);
      WakeAt(now + kScalePeriod, kNoFunction, kTagScale);
      return;
    case kTagRelease:
      if (gpus_[f].active && gpus_[f].empty()) Release(f);
      return;
    case kTagOverrun:
      return CheckOverrun(now, f);
    default:
      return;
  }
}

}  // namespace gshare::policy::internal
