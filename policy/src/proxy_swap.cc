// proxy-swap: a FaaSwap-like baseline. A fixed pool (PolicyConfig::pool_gpus GPUs, active from
// the start); models live in host memory and are loaded on demand. A request goes to a GPU that
// already caches its model, else to the least-loaded GPU, where it waits FIFO; the model is
// loaded when its turn comes, evicting least-recently-used models.
#include <algorithm>

#include "policies.h"
#include "policy_base.h"

namespace gshare::policy::internal {
namespace {

class ProxySwap final : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;

 private:
  Duration Predict(FunctionId f) const override { return fns_[f].exec.Predict({0.9, 0.0}); }

  GpuId PoolSize() const {
    const auto all = static_cast<GpuId>(gpus_.size());
    return config_.pool_gpus > 0 ? std::min(all, static_cast<GpuId>(config_.pool_gpus)) : all;
  }

  void OnStarted(Time now) override {
    for (GpuId g = 0; g < PoolSize(); ++g) Activate(now, g);
  }

  void Place(Time now, FunctionId f) override {
    // Least contended: earliest predicted free time, then most free memory (no eviction).
    GpuId best = 0;
    for (GpuId g = 1; g < PoolSize(); ++g) {
      const Time a = GpuFreeAt(now, g), b = GpuFreeAt(now, best);
      if (a < b || (a == b && gpus_[g].free() > gpus_[best].free())) best = g;
    }
    Enqueue(now, f, best);
  }
};

}  // namespace

std::unique_ptr<Policy> MakeProxySwap(const std::string& name, const PolicyConfig& config) {
  return std::make_unique<ProxySwap>(name, config);
}

}  // namespace gshare::policy::internal
