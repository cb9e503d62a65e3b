// PolicyBase's co-running at dispatch (spec.corun GPUs only): co-run grants beside a GPU's
// holders, the holder set as bursts end, and the holders' list (see policy_base.h; the rules
// for who may join are the subclass's MayCorun, slack_scheduler.cc).
#include "policy_base.h"

#include <algorithm>
#include <vector>

namespace gshare::policy::internal {

void PolicyBase::GrantCorun(Time now, FunctionId f, GpuId g) {
  Fn& fn = fns_[f];
  Gpu& gpu = gpus_[g];
  fn.running = true;
  fn.corun = true;
  fn.grant_time = now;
  fn.grant_pred = Predict(f);
  fns_[gpu.tenant].corun = true;
  for (FunctionId h : gpu.corunners) fns_[h].corun = true;
  gpu.corunners.push_back(f);
  Emit(ActionKind::kGrant, f, g, config_.slice, false, /*corun=*/true);
  OnCorunChange(now, g, f);
}

void PolicyBase::TryCorun(Time now, GpuId g) {
  Gpu& gpu = gpus_[g];
  if (!gpu.spec.corun || gpu.tenant == kNoFunction || !fns_[gpu.tenant].running) return;
  // In queue order, and never past a function that may not co-run: co-run grants must not
  // overtake it (a stream of them would keep the GPU held and starve it of its exclusive turn).
  while (!gpu.ready.empty()) {
    const FunctionId f = gpu.ready.front().first;
    const Fn& fn = fns_[f];
    if (fn.where != Residency::kResident || fn.gpu != g || fn.transfer || fn.running ||
        fn.pending.empty() || !MayCorun(now, f, g)) {
      return;
    }
    TakeReady(g, 0);
    GrantCorun(now, f, g);
  }
}

void PolicyBase::ReleaseHolder(Time now, FunctionId f, GpuId g) {
  Gpu& gpu = gpus_[g];
  bool changed = false;
  if (gpu.tenant == f) {
    if (gpu.corunners.empty()) {
      gpu.tenant = kNoFunction;
    } else {
      gpu.tenant = gpu.corunners.front();
      gpu.corunners.erase(gpu.corunners.begin());
      const Fn& next = fns_[gpu.tenant];
      gpu.tenant_end = next.grant_time + next.grant_pred;
      changed = true;
    }
  } else {
    const auto it = std::find(gpu.corunners.begin(), gpu.corunners.end(), f);
    if (it != gpu.corunners.end()) {
      gpu.corunners.erase(it);
      changed = true;
    }
  }
  if (changed) OnCorunChange(now, g, kNoFunction);
}

std::vector<FunctionId> PolicyBase::Holders(GpuId g) const {
  const Gpu& gpu = gpus_[g];
  std::vector<FunctionId> holders;
  if (gpu.tenant != kNoFunction && fns_[gpu.tenant].running) holders.push_back(gpu.tenant);
  holders.insert(holders.end(), gpu.corunners.begin(), gpu.corunners.end());
  return holders;
}

}  // namespace gshare::policy::internal
