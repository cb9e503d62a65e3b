// The slack scheduler's scale-down: releasing empty GPUs and draining lightly used ones onto
// the others when the load allows.
#include "slack_scheduler.h"

#include <algorithm>

namespace gshare::policy::internal {

void SlackScheduler::OnGpuEmpty(Time now, GpuId g) {
  if (opt_.release) return Release(g);
  WakeGpuAt(now + kReleaseDelay, g, kTagRelease);
}

bool SlackScheduler::Drainable(GpuId g) const {
  const Gpu& gpu = gpus_[g];
  if (!gpu.active || !gpu.available || gpu.tenant != kNoFunction || !gpu.ready.empty() || gpu.evictions_in_flight) {
    return false;
  }
  for (FunctionId f : gpu.members) {
    const Fn& fn = fns_[f];
    if (!fn.idle() || fn.queued || fn.waiting || !Movable(f)) return false;
  }
  return true;
}

bool SlackScheduler::FitsElsewhere(GpuId victim) const {
  std::vector<uint64_t> sizes;
  for (FunctionId f : gpus_[victim].members) {
    sizes.push_back(FootprintBytes(fns_[f].spec, Residency::kResident));
  }
  std::sort(sizes.rbegin(), sizes.rend());
  std::vector<uint64_t> room;
  for (GpuId g : active_gpus()) {
    if (g != victim && Usable(g)) room.push_back(gpus_[g].free());
  }
  for (uint64_t size : sizes) {
    auto it = std::find_if(room.begin(), room.end(), [&](uint64_t r) { return r >= size; });
    if (it == room.end()) return false;
    *it -= size;
  }
  return true;
}

void SlackScheduler::Consolidate(Time now) {
  double total_busy = 0;
  for (Duration& busy : busy_) {
    total_busy += static_cast<double>(busy);
    busy = 0;
  }
  const int active = ActiveGpus();
  if (active <= 1) return;
  if (total_busy / static_cast<double>(kScalePeriod) > kScaleUtil * (active - 1)) return;
  GpuId victim = kNoGpu;
  for (GpuId g : active_gpus()) {
    if (Drainable(g) && (victim == kNoGpu || gpus_[g].used < gpus_[victim].used) &&
        FitsElsewhere(g)) {
      victim = g;
    }
  }
  if (victim == kNoGpu) return;
  const std::vector<FunctionId> members = gpus_[victim].members;
  for (FunctionId f : members) {
    if (DeepSafe(f)) {
      DeepEvict(now, f);
      continue;
    }
    GpuId target = kNoGpu;
    for (GpuId g : active_gpus()) {
      if (g == victim || !Usable(g) || gpus_[g].free() < Need(f, g)) continue;
      if (opt_.interference && !Compatible(now, f, g)) continue;
      if (target == kNoGpu || gpus_[g].used > gpus_[target].used) target = g;
    }
    if (target == kNoGpu) return;  // the rest stays; try again next period
    if (fns_[f].where == Residency::kResident) SwapOut(now, f);
    const bool pinned = fns_[f].pinned;
    Load(now, f, target);
    if (!pinned && fns_[f].pinned) Pin(f, false);
    ArmIdle(now + FirstIdleStep(f), f);
  }
}

}  // namespace gshare::policy::internal
