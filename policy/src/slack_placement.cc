// The slack scheduler's placement: swap costs, the GPU a function goes to (residency- and
// swap-cost-aware), whether it can share a GPU (typical rule, collisions, utilisation), and
// loading it there now or at its latest safe start.
#include "slack_scheduler.h"

#include <algorithm>

namespace gshare::policy::internal {

Duration SlackScheduler::HostSwap(FunctionId f) const {
  const GpuId g = fns_[f].last_gpu != kNoGpu ? fns_[f].last_gpu : 0;
  const Transfer t = SwapInCost(fns_[f].spec, Residency::kHost, kNoGpu, g, gpus_[g].spec);
  return gpus_[g].spec.restore_overhead +
         static_cast<Duration>(static_cast<double>(t.bytes) / LinkSpeed(g));
}

bool SlackScheduler::ParkSafe(FunctionId f) const {
  const Fn& fn = fns_[f];
  const GpuId g = fn.gpu != kNoGpu ? fn.gpu : 0;
  const Transfer t = SwapInCost(fn.spec, Residency::kParked, g, g, gpus_[g].spec);
  return static_cast<Duration>(static_cast<double>(t.bytes) / LinkSpeed(g)) +
             Risky(f) <= fn.spec.slo;
}

double SlackScheduler::EvictionCost(Time now, FunctionId f, uint64_t bytes) const {
  const double cost = PolicyBase::EvictionCost(now, f, bytes);
  return DeepSafe(f) ? cost : 1000 * cost;
}

bool SlackScheduler::Home(FunctionId f, GpuId g) const {
  const Fn& fn = fns_[f];
  return fn.gpu == g || (fn.gpu == kNoGpu && fn.last_gpu == g);
}

GpuId SlackScheduler::Choose(Time now, FunctionId f, Time deadline, bool fits_only) const {
  const Duration e = Predict(f);
  const GpuId own = fns_[f].gpu;
  std::span<const GpuId> scan = active_gpus();
  if (now + MinSwapElsewhere(f) + e > deadline) {
    scan = own != kNoGpu && gpus_[own].active ? std::span<const GpuId>(&own, 1) : std::span<const GpuId>();
  }
  GpuId best = kNoGpu;
  std::vector<GpuId> crowded;  // feasible, but room must be made
  for (GpuId g : scan) {
    const Gpu& gpu = gpus_[g];
    if (!Usable(g)) continue;
    const uint64_t need = Need(f, g);
    const bool fits = gpu.free() >= need;
    if (!fits && (fits_only || Reclaimable(g, evict_mode()) < need)) continue;
    // The victims' copy-out comes first on the link (config_.swap_out_copies).
    if (CorunGpu(g) && !Home(f, g) && gpu.members.size() + 1 > gpu.spec.max_clients) continue;
    const Duration out = RoomTime(now, g, need, evict_mode());
    if (PredictedStart(now, f, g, out) + e > deadline) continue;
    if (opt_.interference && !Compatible(now, f, g)) continue;
    if (!opt_.residency) return g;  // first fit
    if (!fits) {
      crowded.push_back(g);
      continue;
    }
    if (Home(f, g)) return g;
    if (best == kNoGpu || gpu.used > gpus_[best].used) best = g;
  }
  if (best != kNoGpu || fits_only) return best;
  double best_cost = 0;
  for (GpuId g : crowded) {
    const double cost = RoomCost(now, g, Need(f, g), evict_mode(), /*pinned_too=*/false);
    if (cost < 0) continue;
    if (best == kNoGpu || cost < best_cost ||
        (cost == best_cost && (Home(f, g) || (!Home(f, best) && gpus_[g].used > gpus_[best].used)))) {
      best = g;
      best_cost = cost;
    }
  }
  return best;
}

double SlackScheduler::Utilisation(FunctionId f) const {
  const double gap = fns_[f].arrivals.MeanGap();
  return gap > 0 ? static_cast<double>(Typical(f)) / gap : kUnknownUtil;
}

double SlackScheduler::Rate(FunctionId f) const {
  const double gap = fns_[f].arrivals.MeanGap();
  return gap > 0 ? 1.0 / gap : kUnknownUtil / static_cast<double>(std::max<Duration>(1, Typical(f)));
}

double SlackScheduler::Collisions(FunctionId victim, FunctionId other) const {
  const Duration slack = std::max<Duration>(0, fns_[victim].spec.slo - Typical(victim));
  return Rate(other) * fns_[other].exec.ExpectedExcess(slack);
}

bool SlackScheduler::Compatible(Time now, FunctionId f, GpuId g) const {
  return TimeSliced(f, g) || CorunPacks(now, f, g);
}

bool SlackScheduler::TypicalFits(FunctionId f, Duration ef, FunctionId m) const {
  const Duration em = Typical(m);
  return em <= fns_[f].spec.slo - ef && ef <= fns_[m].spec.slo - em;
}

bool SlackScheduler::TimeSliced(FunctionId f, GpuId g) const {
  const Duration ef = Typical(f);
  double util = Utilisation(f);
  double f_misses = 0;
  for (FunctionId m : gpus_[g].members) {
    if (m == f) continue;
    if (opt_.typical && !TypicalFits(f, ef, m)) return false;
    if (opt_.collisions) {
      f_misses += Collisions(f, m);
      if (f_misses > kMissBudget || Collisions(m, f) > kMissBudget) return false;
    }
    util += Utilisation(m);
    if (util > kMaxUtil) return false;
  }
  return true;
}

bool SlackScheduler::Relocate(Time now, FunctionId f) {
  if (!opt_.interference) return false;
  Fn& fn = fns_[f];
  const GpuId home = fn.gpu;
  if (PredictedStart(now, f, home) + Predict(f) <= fn.deadline()) return false;
  if (fn.pinned || !Movable(f)) return false;  // cannot afford the move's swap / may not move
  // Only where it fits without evicting anyone: a move that evicts others moves them in
  // turn (with `residency`; without it, any feasible GPU).
  const GpuId g = Choose(now, f, fn.deadline(), /*fits_only=*/opt_.residency);
  if (g == kNoGpu || g == home) return false;
  SwapOut(now, f);
  Load(now, f, g);  // a migration: its context on `home` is dropped
  return true;
}

void SlackScheduler::Load(Time now, FunctionId f, GpuId g) {
  (void)MakeRoom(now, g, Need(f, g), evict_mode());
  SwapIn(now, f, g);
  if (!DeepSafe(f)) Pin(f, true);  // cache queue: keep a resident slice
}

void SlackScheduler::Place(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  // The environment already keeps f's state on a GPU (FunctionRegistered::state_on): its
  // first placement goes there when it fits beside what the policy put there (the swap-in
  // then costs nothing), activating that GPU if need be.
  if (opt_.residency && fn.state_on != kNoGpu) {
    const GpuId g = fn.state_on;
    fn.state_on = kNoGpu;
    if (Usable(g) && gpus_[g].free() >= Need(f, g)) {
      if (!gpus_[g].active) Activate(now, g);
      return Load(now, f, g);
    }
  }
  const Time latest = fn.deadline() - Predict(f) - HostSwap(f) - kMargin;
  if (opt_.eager || latest <= now) {
    const GpuId g = Choose(now, f, fn.deadline());
    if (g != kNoGpu) return Load(now, f, g);
  }
  const bool known = fn.exec.samples() >= ExecPredictor::kMinSamples;
  // Share queue: wait for the last safe moment, in case a better place appears by then. Eager:
  // only while a GPU could still be activated; on a node whose usable GPUs are all on, waiting
  // frees nothing and spends the request's slack (its latency would approach its SLO).
  const bool may_improve = !opt_.eager || HasInactiveUsableGpu();
  if (latest > now && (known || !opt_.cold) && may_improve) {
    fn.waiting = true;
    WakeAt(latest, f, kTagSlack);
    return;
  }
  PlaceNow(now, f, fn.deadline());
}

bool SlackScheduler::HasInactiveUsableGpu() const {
  const auto available = static_cast<size_t>(AvailableGpus());
  if (available > active_gpus().size()) return true;  // the common case: no scan
  const auto usable_active = static_cast<size_t>(std::count_if(
      active_gpus().begin(), active_gpus().end(), [&](GpuId g) { return Usable(g); }));
  return available > usable_active;
}

void SlackScheduler::PlaceNow(Time now, FunctionId f, Time deadline) {
  if (AvailableGpus() == 0) {  // every GPU is unavailable: wait for one (no prefetching)
    if (!fns_[f].pending.empty()) Hold(f);
    return;
  }
  GpuId g = Choose(now, f, deadline);
  if (g == kNoGpu) {
    for (GpuId i = 0; i < gpus_.size() && g == kNoGpu; ++i) {
      if (!gpus_[i].active && Usable(i)) {
        Activate(now, i);
        g = i;
      }
    }
  }
  if (g == kNoGpu) g = LeastBad(now, f, /*pinned_too=*/false);
  // Evicting a pinned function (the cache queue: it cannot afford a swap) only once f's own
  // slack is gone; until then f waits for a burst to end somewhere.
  const Time latest = deadline - Predict(f) - HostSwap(f);
  if (g == kNoGpu && latest <= now) g = LeastBad(now, f, /*pinned_too=*/true);
  if (g == kNoGpu) {  // every GPU's memory is held by work: back off and retry
    fns_[f].waiting = true;
    const int shift = std::min<int>(fns_[f].retries++, 10);
    // Never past its latest safe start (from then on a pinned victim may go); once that
    // has passed, the plain backoff (a blocked late function must not spin every kRetry).
    const Time retry = now + (kRetry << shift);
    WakeAt(latest > now ? std::min(retry, latest) : retry, f, kTagSlack);
    // And at the next burst end, when memory may have become free (once per function).
    if (std::find(blocked_.begin(), blocked_.end(), f) == blocked_.end()) blocked_.push_back(f);
    return;
  }
  fns_[f].retries = 0;
  Load(now, f, g);
}

GpuId SlackScheduler::LeastBad(Time now, FunctionId f, bool pinned_too) const {
  GpuId best = kNoGpu;
  Time best_start = kNever;
  double best_cost = 0;
  for (GpuId i : active_gpus()) {
    const uint64_t need = Need(f, i);
    if (!Usable(i) || (gpus_[i].free() < need && Reclaimable(i, evict_mode()) < need)) continue;
    const Time start = PredictedStart(now, f, i, RoomTime(now, i, Need(f, i), evict_mode()));
    const double cost =
        opt_.residency ? RoomCost(now, i, Need(f, i), evict_mode(), pinned_too) : 0;
    if (cost < 0) continue;
    if (best == kNoGpu || cost < best_cost || (cost == best_cost && start < best_start)) {
      best = i;
      best_start = start;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace gshare::policy::internal
