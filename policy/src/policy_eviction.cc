// PolicyBase's eviction: which resident or parked functions may go, what room on a GPU costs
// and takes (LRU or cost-aware victims), and making it (see policy_base.h).
#include "policy_base.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gshare::policy::internal {

bool PolicyBase::Evictable(FunctionId f, GpuId g, bool pinned_too) const {
  const Fn& fn = fns_[f];
  return fn.idle() && (pinned_too || !fn.pinned) && !fn.queued && !fn.waiting &&
         gpus_[g].tenant != f &&
         (Movable(f) || (fn.spec.pinned_parkable && fn.where == Residency::kResident));
}

GpuId PolicyBase::PinnedTo(FunctionId f) const {
  const Fn& fn = fns_[f];
  if (!fn.spec.pinned) return kNoGpu;
  return fn.gpu != kNoGpu ? fn.gpu : fn.state_on;
}

bool PolicyBase::Movable(FunctionId f) const {
  return !fns_[f].spec.pinned || fns_[f].gpu == kNoGpu;
}

bool PolicyBase::Parkable(FunctionId f) const {
  return Movable(f) || fns_[f].spec.pinned_parkable;
}

uint64_t PolicyBase::VictimBytes(FunctionId f) const {
  const Fn& fn = fns_[f];
  return Movable(f) ? FootprintBytes(fn.spec, fn.where) : fn.spec.weights_bytes;
}

void PolicyBase::EvictVictim(Time now, FunctionId f) {
  if (Movable(f)) return DeepEvict(now, f);
  SwapOut(now, f);  // pinned to its GPU but parkable (FunctionSpec::pinned_parkable): parked there
}

std::vector<FunctionId> PolicyBase::EvictionOrder(GpuId g, Residency state, bool pinned_too) const {
  std::vector<FunctionId> order;
  for (FunctionId f : gpus_[g].members) {
    if (fns_[f].where == state && Evictable(f, g, pinned_too)) {
      order.push_back(f);
    }
  }
  std::sort(order.begin(), order.end(), [this](FunctionId a, FunctionId b) {
    return fns_[a].last_use != fns_[b].last_use ? fns_[a].last_use < fns_[b].last_use : a < b;
  });
  return order;
}

uint64_t PolicyBase::Reclaimable(GpuId g, Evict /*mode*/) const {
  uint64_t bytes = gpus_[g].free();
  for (FunctionId f : gpus_[g].members) {
    if (Evictable(f, g, /*pinned_too=*/true)) bytes += VictimBytes(f);
  }
  return bytes;
}

uint64_t PolicyBase::Need(FunctionId f, GpuId g) const {
  const Fn& fn = fns_[f];
  return FootprintBytes(fn.spec, Residency::kResident) -
         (fn.gpu == g ? FootprintBytes(fn.spec, fn.where) : 0);
}

int PolicyBase::Affinity(FunctionId f, GpuId g) const {
  const Fn& fn = fns_[f];
  if (fn.gpu == g || (fn.gpu == kNoGpu && fn.last_gpu == g)) return 0;
  return gpus_[g].free() >= Need(f, g) ? 1 : 2;
}

double PolicyBase::EvictionCost(Time now, FunctionId f, uint64_t bytes) const {
  const Fn& fn = fns_[f];
  const double idle = static_cast<double>(std::max<Duration>(0, now - fn.last_use));
  const double gap = fn.arrivals.gaps() > 0 ? std::max(fn.arrivals.MeanGap(), idle)
                                            : std::max<double>(idle, kUsPerSecond);
  const double reuse = static_cast<double>(bytes) * static_cast<double>(kUsPerSecond) / std::max(1.0, gap);
  // A copy-out moves the bytes now for certain: counted as if they came back within a second.
  return config_.swap_out_copies ? reuse + static_cast<double>(bytes) : reuse;
}

Duration PolicyBase::EvictTime(FunctionId f, bool park) const {
  const Fn& fn = fns_[f];
  const Gpu& gpu = gpus_[fn.gpu];
  if (!config_.swap_out_copies) return park ? 0 : DeepEvictCost(fn.spec, fn.where, gpu.spec).time;
  const uint64_t bytes = park ? fn.spec.weights_bytes : FootprintBytes(fn.spec, fn.where);
  return static_cast<Duration>(std::ceil(static_cast<double>(bytes) / LinkSpeed(fn.gpu)));
}

Duration PolicyBase::RoomTime(Time now, GpuId g, uint64_t need, Evict mode) const {
  const Gpu& gpu = gpus_[g];
  if (!config_.swap_out_copies || gpu.free() >= need) return 0;
  const uint64_t more = need - gpu.free();
  const bool park = mode == Evict::kParkFirst;
  auto freed = [this, park](FunctionId f) {
    return park ? fns_[f].spec.weights_bytes : VictimBytes(f);
  };
  double cost = 0;
  const std::vector<FunctionId> victims = CheapestVictims(now, g, Residency::kResident, more, freed, &cost);
  if (victims.empty()) {  // MakeRoom's fallback: at least the missing bytes are copied out
    return static_cast<Duration>(std::ceil(static_cast<double>(more) / LinkSpeed(g)));
  }
  Duration total = 0;
  for (FunctionId f : victims) total += EvictTime(f, park || !Movable(f));
  return total;
}

template <class Freed>
std::vector<FunctionId> PolicyBase::CheapestVictims(Time now, GpuId g, Residency state,
                                                    uint64_t need, Freed freed,
                                                    double* cost) const {
  struct Candidate {
    FunctionId f;
    uint64_t bytes;
    double cost;
  };
  std::vector<Candidate> all;
  for (FunctionId f : EvictionOrder(g, state)) {  // least recently used first: the tie-break
    const uint64_t bytes = freed(f);
    if (bytes > 0) all.push_back({f, bytes, EvictionCost(now, f, bytes)});
  }
  // Greedy by cost per *useful* byte (a victim larger than what is still missing counts only
  // the missing bytes: evicting a 1.1 GiB model to free 150 MiB is paid in full, so two small
  // victims may be cheaper), then drop any victim the rest already covers (most expensive
  // first). Quadratic in the candidates, who are the GPU's idle functions.
  std::vector<Candidate> taken;
  std::vector<bool> used(all.size(), false);
  uint64_t got = 0;
  while (got < need) {
    size_t best = all.size();
    double best_rate = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      if (used[i]) continue;
      const double rate = all[i].cost / static_cast<double>(std::min(all[i].bytes, need - got));
      if (best == all.size() || rate < best_rate) {
        best = i;
        best_rate = rate;
      }
    }
    if (best == all.size()) return {};
    used[best] = true;
    taken.push_back(all[best]);
    got += all[best].bytes;
  }
  std::vector<size_t> by_cost(taken.size());
  for (size_t i = 0; i < taken.size(); ++i) by_cost[i] = i;
  std::stable_sort(by_cost.begin(), by_cost.end(),
                   [&](size_t a, size_t b) { return taken[a].cost > taken[b].cost; });
  std::vector<bool> keep(taken.size(), true);
  double greedy_cost = 0;
  for (size_t i : by_cost) {
    if (got - taken[i].bytes >= need) {
      keep[i] = false;
      got -= taken[i].bytes;
    } else {
      greedy_cost += taken[i].cost;
    }
  }
  // One victim that covers the need alone may be cheaper than the greedy set.
  const Candidate* single = nullptr;
  for (const Candidate& c : all) {
    if (c.bytes >= need && (single == nullptr || c.cost < single->cost)) single = &c;
  }
  std::vector<FunctionId> victims;
  if (single != nullptr && single->cost < greedy_cost) {
    victims.push_back(single->f);
    *cost += single->cost;
    return victims;
  }
  for (size_t i = 0; i < taken.size(); ++i) {
    if (keep[i]) victims.push_back(taken[i].f);
  }
  *cost += greedy_cost;
  return victims;
}

double PolicyBase::RoomCost(Time now, GpuId g, uint64_t need, Evict mode, bool pinned_too) const {
  const Gpu& gpu = gpus_[g];
  if (gpu.free() >= need) return 0;
  if (Reclaimable(g, mode) < need) return -1;
  double cost = 0;
  const uint64_t more = need - gpu.free();
  auto footprint = [this](FunctionId f) { return VictimBytes(f); };
  if (!CheapestVictims(now, g, Residency::kResident, more, footprint, &cost).empty()) return cost;
  if (!pinned_too) {
    uint64_t unpinned = gpu.free();
    for (FunctionId f : gpu.members) {
      if (Evictable(f, g, /*pinned_too=*/false)) unpinned += footprint(f);
    }
    if (unpinned < need) return -1;
  }
  // Beyond one state's victims (or only pinned ones left): everything evictable, as MakeRoom's
  // fallback would take it.
  cost = 0;
  for (FunctionId f : gpu.members) {
    if (Evictable(f, g, /*pinned_too=*/true)) cost += EvictionCost(now, f, footprint(f));
  }
  return cost;
}

bool PolicyBase::MakeRoom(Time now, GpuId g, uint64_t need, Evict mode) {
  Gpu& gpu = gpus_[g];
  if (gpu.free() >= need) return true;
  if (Reclaimable(g, mode) < need) return false;
  if (cost_aware_eviction_) {
    double cost = 0;
    const uint64_t more = need - gpu.free();
    if (mode == Evict::kParkFirst) {
      auto weights = [this](FunctionId f) { return fns_[f].spec.weights_bytes; };
      for (FunctionId f : CheapestVictims(now, g, Residency::kResident, more, weights, &cost)) {
        SwapOut(now, f);
      }
    } else {
      auto footprint = [this](FunctionId f) { return VictimBytes(f); };
      for (FunctionId f : CheapestVictims(now, g, Residency::kResident, more, footprint, &cost)) {
        EvictVictim(now, f);
      }
    }
    if (gpu.free() >= need) return true;
    // Not enough in resident functions alone: the least recently used order below finishes.
  }
  if (mode == Evict::kParkFirst) {
    for (FunctionId f : EvictionOrder(g, Residency::kResident)) {
      if (gpu.free() >= need) return true;
      SwapOut(now, f);
    }
  } else {
    for (FunctionId f : EvictionOrder(g, Residency::kResident)) {
      if (gpu.free() >= need) return true;
      EvictVictim(now, f);
    }
  }
  for (FunctionId f : EvictionOrder(g, Residency::kParked)) {
    if (gpu.free() >= need) return true;
    DeepEvict(now, f);
  }
  // Last resort: idle pinned functions, least recently used first (a KeepResident pin protects
  // a function from eviction for convenience, never to the point of starving a request; a
  // function pinned to its GPU, FunctionSpec::pinned, is never Evictable, unless it is
  // pinned_parkable and resident: then it is parked there, EvictVictim).
  for (Residency state : {Residency::kParked, Residency::kResident}) {
    for (FunctionId f : EvictionOrder(g, state, /*pinned_too=*/true)) {
      if (gpu.free() >= need) return true;
      EvictVictim(now, f);
    }
  }
  return gpu.free() >= need;
}

}  // namespace gshare::policy::internal
