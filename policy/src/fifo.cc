// fifo: time-sharing without SLO awareness. Functions are packed first-fit onto the active
// GPUs (preferring the GPU a function was last on, then one with free memory) and served FIFO per GPU (models loaded at dispatch, LRU eviction). A GPU is added only
// when no active GPU can hold the model or every active GPU has more than `kBacklog` of queued
// work; functions idle for `kIdleTtl` are deep-evicted (never one pinned to its GPU:
// FunctionSpec::pinned) and empty GPUs released.
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
    // First fit by preference: where f was last, then where it fits without evicting anyone,
    // then where room can be made (always within the backlog bound).
    GpuId inactive = kNoGpu, best = kNoGpu;
    int best_affinity = 3;
    for (GpuId g = 0; g < gpus_.size(); ++g) {
      if (!Usable(g)) continue;
      if (!gpus_[g].active) {
        if (inactive == kNoGpu) inactive = g;
        continue;
      }
      if ((gpus_[g].free() >= Need(f, g) || Reclaimable(g, Evict::kDeep) >= Need(f, g)) &&
          GpuFreeAt(now, g) - now <= kBacklog &&
          Affinity(f, g) < best_affinity) {
        best = g;
        best_affinity = Affinity(f, g);
      }
    }
    if (best != kNoGpu) {
      Enqueue(now, f, best);
      return;
    }
    if (inactive != kNoGpu) {
      Activate(now, inactive);
      Enqueue(now, f, inactive);
      return;
    }
    // Everything busy: the least-loaded usable GPU (all are active).
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
        gpus_[fn.gpu].tenant != f && Movable(f)) {
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
