// keepalive: the paper's baseline. Each function gets a dedicated GPU on its first request and
// keeps it (model resident) while it has had a request in the last `keepalive_ttl`; then it is
// deep-evicted and the GPU released. Functions wait (FIFO) when no GPU is free. A function
// pinned to its GPU (FunctionSpec::pinned) keeps it for its whole life: it never expires.
#include <algorithm>
#include <deque>
#include <vector>

#include "policies.h"
#include "policy_base.h"

namespace gshare::policy::internal {
namespace {

constexpr Duration kRecheck = kUsPerSecond;  // busy at expiry: look again this much later

class KeepAlive final : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;

 private:
  Duration Predict(FunctionId f) const override { return fns_[f].exec.Predict({0.9, 0.0}); }
  size_t OwnEntries() const override { return waiters_.size(); }

  void Place(Time now, FunctionId f) override {
    for (GpuId g = 0; g < gpus_.size(); ++g) {
      if (!gpus_[g].active && Usable(g)) {
        Activate(now, g);
        SwapIn(now, f, g);
        WakeAt(fns_[f].arrivals.last() + config_.keepalive_ttl, f, 0);
        return;
      }
    }
    fns_[f].waiting = true;
    waiters_.push_back(f);
  }

  void OnWake(Time now, FunctionId f, uint32_t /*tag*/) override {
    Fn& fn = fns_[f];
    if (fn.where == Residency::kHost) return;  // expired already; the next placement re-arms
    if (!Movable(f)) return;  // pinned to its GPU: it never expires (no wakeup again)
    const Time expiry = fn.arrivals.last() + config_.keepalive_ttl;
    if (now >= expiry && fn.idle() && !fn.queued) {  // idle(): also no swap in flight
      DeepEvict(now, f);
    } else {
      WakeAt(std::max(expiry, now + kRecheck), f, 0);
    }
  }

  void OnGpuEmpty(Time now, GpuId g) override {
    Release(g);
    ServeWaiters(now);
  }
  void OnGpuAvailable(Time now, GpuId /*g*/) override { ServeWaiters(now); }
  void OnGone(Time /*now*/, FunctionId f) override {
    if (fns_[f].waiting) waiters_.erase(std::remove(waiters_.begin(), waiters_.end(), f), waiters_.end());
  }

  bool FreeGpu() const {
    for (GpuId g = 0; g < gpus_.size(); ++g) {
      if (!gpus_[g].active && Usable(g)) return true;
    }
    return false;
  }
  // Gives free GPUs to waiting functions, first come first served.
  void ServeWaiters(Time now) {
    while (!waiters_.empty() && FreeGpu()) {
      const FunctionId f = waiters_.front();
      waiters_.pop_front();
      fns_[f].waiting = false;
      if (!fns_[f].pending.empty() && !fns_[f].transfer) Place(now, f);
    }
  }

  std::deque<FunctionId> waiters_;
};

}  // namespace

std::unique_ptr<Policy> MakeKeepAlive(const std::string& name, const PolicyConfig& config) {
  return std::make_unique<KeepAlive>(name, config);
}

}  // namespace gshare::policy::internal
