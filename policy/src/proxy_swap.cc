// proxy-swap: a FaaSwap-like baseline. A fixed pool (PolicyConfig::pool_gpus GPUs, active from
// the start); models live in host memory and are loaded on demand. A request goes to a GPU that
// already caches its model, else to the least-loaded GPU, where it waits FIFO; the model is
// loaded when its turn comes, evicting least-recently-used models. A pool GPU that becomes
// unavailable is replaced by an available GPU outside the pool, if there is one; the pool
// takes a GPU back when one becomes available while it is short.
#include <algorithm>
#include <vector>

#include "policies.h"
#include "policy_base.h"

namespace gshare::policy::internal {
namespace {

class ProxySwap final : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;

 private:
  Duration Predict(FunctionId f) const override { return fns_[f].exec.Predict({0.9, 0.0}); }

  size_t PoolSize() const {
    const size_t all = gpus_.size();
    return config_.pool_gpus > 0 ? std::min(all, static_cast<size_t>(config_.pool_gpus)) : all;
  }

  void OnStarted(Time now) override { Refill(now); }

  // Adds usable GPUs, lowest id first, until the pool has its size (one still active after
  // an unavailable spell joins as it is).
  void Refill(Time now) {
    for (GpuId g = 0; g < gpus_.size() && pool_.size() < PoolSize(); ++g) {
      if (!Usable(g) || std::find(pool_.begin(), pool_.end(), g) != pool_.end()) continue;
      if (!gpus_[g].active) Activate(now, g);
      pool_.push_back(g);
    }
  }

  void OnGpuUnavailable(Time now, GpuId g) override {
    pool_.erase(std::remove(pool_.begin(), pool_.end(), g), pool_.end());
    Refill(now);
  }
  void OnGpuAvailable(Time now, GpuId /*g*/) override { Refill(now); }

  void Place(Time now, FunctionId f) override {
    if (pool_.empty()) return Hold(f);  // no usable GPU left inactive to replace the lost ones
    // Least contended: earliest predicted free time; among equally free GPUs the one the model
    // was last on (nothing needs moving), then one where it fits without evicting, then the
    // most free memory.
    GpuId best = pool_.front();
    for (GpuId g : pool_) {
      const Time a = GpuFreeAt(now, g), b = GpuFreeAt(now, best);
      const int x = Affinity(f, g), y = Affinity(f, best);
      if (a < b || (a == b && (x < y || (x == y && gpus_[g].free() > gpus_[best].free())))) best = g;
    }
    Enqueue(now, f, best);
  }

  std::vector<GpuId> pool_;  // the active pool GPUs, in the order they joined
};

}  // namespace

std::unique_ptr<Policy> MakeProxySwap(const std::string& name, const PolicyConfig& config) {
  return std::make_unique<ProxySwap>(name, config);
}

}  // namespace gshare::policy::internal
