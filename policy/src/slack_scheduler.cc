// The slack scheduler's construction, share classes, dispatch order, burst ends, retries and
// overrun rescue (slack_scheduler.h says what the policy is and where the rest lives).
#include "slack_scheduler.h"

#include <algorithm>
#include <memory>

namespace gshare::policy::internal {

SlackScheduler::SlackScheduler(const std::string& name, const PolicyConfig& config,
                               const SlackOptions& options)
    : PolicyBase(name, config), opt_(options), corun_(config.gpus.size()) {
  rule_ = opt_.learned ? PaddingRule{0.95, 0.0} : PaddingRule{0.9, config.padding};
  safety_ = opt_.learned ? PaddingRule{0.9, 0.0} : rule_;
  busy_.assign(gpus_.size(), 0);
  cost_aware_eviction_ = opt_.residency;
  overrun_estimate_ = opt_.rescue;
}

ShareClass SlackScheduler::ShareFor(FunctionId f) const {
  if (f >= fns_.size() || !fns_[f].registered) return ShareClass{};
  return ShareForSpec(fns_[f].spec);
}

ShareClass SlackScheduler::ShareForSpec(const FunctionSpec& spec) const {
  if (!opt_.corun) return ShareClass{};
  return CorunBook::ShareOf(spec);
}

void SlackScheduler::OnStarted(Time now) {
  if (opt_.scale) WakeAt(now + kScalePeriod, kNoFunction, kTagScale);
}

size_t SlackScheduler::PickReady(Time now, GpuId g) const {
  const auto& ready = gpus_[g].ready;
  if (!opt_.edf || ready.size() < 2) return 0;
  size_t best = 0;
  bool best_behind = false;
  Time best_key = kNever;
  for (size_t i = 0; i < ready.size(); ++i) {
    const Fn& fn = fns_[ready[i].first];
    const Time slack = fn.deadline() - now - ready[i].second;
    const bool behind = fn.yielded && slack < 0;
    const Time key = behind ? fn.queued_at : slack;
    if (i == 0 || (!behind && best_behind) || (behind == best_behind && key < best_key)) {
      best = i;
      best_behind = behind;
      best_key = key;
    }
  }
  if (!fns_[ready[best].first].yielded) return best;
  size_t starved = ready.size();
  for (size_t i = 0; i < ready.size(); ++i) {
    const Fn& fn = fns_[ready[i].first];
    if (i == best || now - fn.queued_at < HoldBound()) continue;
    if (starved == ready.size() || fn.queued_at < fns_[ready[starved].first].queued_at) starved = i;
  }
  return starved != ready.size() ? starved : best;
}

void SlackScheduler::OnBurstDone(Time now, FunctionId f, GpuId g) {
  if (opt_.rescue && gpus_[g].tenant == kNoFunction) CancelGpuWake(g, kTagOverrun);  // no overrun
  busy_[g] += now - fns_[f].grant_time;
  AfterBurst(now, f, g);
  RetryBlocked(now);
}

void SlackScheduler::RetryBlocked(Time now) {
  if (blocked_.empty()) return;
  std::vector<FunctionId> blocked;
  blocked.swap(blocked_);
  for (FunctionId b : blocked) {
    Fn& fn = fns_[b];
    if (!fn.waiting || fn.held || fn.pending.empty() || fn.transfer ||
        fn.where == Residency::kResident) {
      continue;
    }
    fn.waiting = false;
    PlaceNow(now, b, fn.deadline());
  }
}

void SlackScheduler::AfterBurst(Time now, FunctionId f, GpuId g) {
  Fn& fn = fns_[f];
  if (!fn.pending.empty()) return;
  const Duration gap = static_cast<Duration>(fn.arrivals.MeanGap());
  if (opt_.prefetch && gap >= kPrefetchMinGap && fn.arrivals.Periodic() && !fn.queued &&
      gpus_[g].tenant != f && Movable(f)) {
    DeepEvict(now, f);  // come back just before the next tick
    const Duration lead = HostSwap(f) + std::min<Duration>(gap / 20, kUsPerSecond) + 5'000;
    WakeAt(fn.arrivals.NextArrival() - lead, f, kTagPrefetch);
    return;
  }
  ArmIdle(now + FirstIdleStep(f), f);
}

void SlackScheduler::OnGone(Time /*now*/, FunctionId f) {
  blocked_.erase(std::remove(blocked_.begin(), blocked_.end(), f), blocked_.end());
  corun_.Forget(f);
}

void SlackScheduler::OnGranted(Time now, FunctionId f, GpuId g) {
  if (CorunGpu(g)) corun_.Start(f, now);
  if (opt_.rescue) WakeGpuAt(gpus_[g].tenant_end + kMargin, g, kTagOverrun);
}

void SlackScheduler::CheckOverrun(Time now, GpuId g) {
  const Gpu& gpu = gpus_[g];
  if (gpu.tenant == kNoFunction || !fns_[gpu.tenant].running || now < gpu.tenant_end) return;
  const Time began = fns_[gpu.tenant].grant_time;
  const Time end = TenantEnd(now, g);
  Time next = now + std::max(kMargin, (now - began) / 2);
  Duration ahead = 0;  // predicted work queued ahead
  const auto ready = gpu.ready;  // a copy: moves change the queue
  for (const auto& [q, pred] : ready) {
    const Fn& fq = fns_[q];
    const Time deadline = fq.deadline();
    const bool movable = !fq.pinned && Movable(q) && !fq.transfer &&
                         fq.where == Residency::kResident && fq.gpu == g;
    if (movable && end + ahead + pred > deadline) {
      const GpuId to = Choose(now, q, deadline, /*fits_only=*/true);
      if (to != kNoGpu && to != g) {
        Unqueue(q, g);
        SwapOut(now, q);
        Load(now, q, to);  // a migration: its context on g is dropped
        continue;
      }
    } else if (movable) {
      // TenantEnd(t) = 2t - began: q starts to miss once 2t - began + ahead + pred > deadline.
      next = std::min(next, (deadline - pred - ahead + began) / 2 + 1);
    }
    ahead += pred;
  }
  WakeGpuAt(std::max(next, now + 1), g, kTagOverrun);
}

std::unique_ptr<Policy> MakeSlackScheduler(const std::string& name, const PolicyConfig& config,
                                           const SlackOptions& options) {
  return std::make_unique<SlackScheduler>(name, config, options);
}

}  // namespace gshare::policy::internal
