// fifo: time-sharing without SLO awareness. Functions are packed first-fit onto the active
// GPUs and served FIFO per GPU (models loaded at dispatch, LRU eviction). A GPU is added only
// when no active GPU can hold the model or every active GPU has more than `kBacklog` of queued
// work; functions idle for `kIdleTtl` are deep-evicted and empty GPUs released.
#include "policies.h"
#include "policy_base.h"

namespace gshare::policy::internal {
namespace {

constexpr Duration kBacklog = 1 * kUsPerSecond;
constexpr Duration kIdleTtl = 60 * kUsPerSecond;

class Fifo final : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;

 private:
  Duration Predict(FunctionId f) const override { return fns_[f].exec.Predict({0.9, 0.0}); }

  void Place(Time now, FunctionId f) override {
    const uint64_t need = FootprintBytes(fns_[f].spec, Residency::kResident);
    GpuId inactive = kNoGpu;
    for (GpuId g = 0; g < gpus_.size(); ++g) {
      if (!Usable(g)) continue;
      if (!gpus_[g].active) {
        if (inactive == kNoGpu) inactive = g;
        continue;
      }
      if (Reclaimable(g, Evict::kDeep) >= need && GpuFreeAt(now, g) - now <= kBacklog) {
        Enqueue(now, f, g);
        return;
      }
    }
    if (inactive != kNoGpu) {
      Activate(now, inactive);
      Enqueue(now, f, inactive);
      return;
    }
    GpuId best = kNoGpu;  // everything busy: the least-loaded usable GPU (all are active)
    for (GpuId g = 0; g < gpus_.size(); ++g) {
      if (Usable(g) && (best == kNoGpu || GpuFreeAt(now, g) < GpuFreeAt(now, best))) best = g;
    }
    Enqueue(now, f, best);
  }

  void OnBurstDone(Time now, FunctionId f, GpuId /*g*/) override {
    if (fns_[f].pending.empty()) WakeAt(now + kIdleTtl, f, 0);
  }

  void OnWake(Time now, FunctionId f, uint32_t /*tag*/) override {
    Fn& fn = fns_[f];
    if (fn.where != Residency::kHost && fn.idle() && !fn.queued && now - fn.last_use >= kIdleTtl &&
        gpus_[fn.gpu].tenant != f) {
      DeepEvict(now, f);
    }
  }

  void OnGpuEmpty(Time /*now*/, GpuId g) override { Release(g); }
};

}  // namespace

std::unique_ptr<Policy> MakeFifo(const std::string& name, const PolicyConfig& config) {
  return std::make_unique<Fifo>(name, config);
}

}  // namespace gshare::policy::internal
