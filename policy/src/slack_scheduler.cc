// The SLO-aware slack scheduler behind "dual-queue" (the paper's dual-queue lazy scheduling:
// every idea below off, p90 * 1.4 prediction) and "aggressive" (ours, every idea on).
//
// Core (both): a request whose function is resident runs on that GPU (per-GPU FIFO). Otherwise
// the function needs a swap-in: functions whose predicted host swap + execution exceeds their
// SLO form the "cache queue" and are pinned resident once loaded; the others wait in the
// "share queue" (the wakeup heap, ordered by latest safe start = deadline - predicted exec -
// swap time) and at that moment take a feasible active GPU (memory reclaimable, predicted
// finish within the deadline) or a new one.
//
// Aggressive ideas, each with an ablation flag (SlackOptions): learned quantile prediction;
// residency- and swap-cost-aware packing GPU choice; eager placement on active GPUs; parking
// idle functions (context stays, weights freed) and deep-evicting long-idle ones; prefetching
// periodic functions ahead of their next arrival; releasing empty GPUs at once; and draining
// lightly used GPUs onto the others when the load allows (scale down).
//
// A function pinned to its GPU (FunctionSpec::pinned) once placed is never parked, deep-evicted,
// prefetched, relocated, rescued onto another GPU or drained away by scale-down; the base never
// takes it as a victim (policy_base.h, invariant 4).
#include <algorithm>
#include <span>
#include <vector>

#include "corun.h"
#include "policies.h"
#include "policy_base.h"

namespace gshare::policy::internal {
namespace {

enum Tag : uint32_t { kTagSlack = 1, kTagIdle, kTagPrefetch, kTagScale, kTagRelease, kTagOverrun };

constexpr Duration kMargin = 1'000;                         // safety on the latest start
constexpr Duration kShareIdleTtl = 60 * kUsPerSecond;       // dual-queue: evict idle after
constexpr Duration kReleaseDelay = 60 * kUsPerSecond;       // without `release`
constexpr Duration kScalePeriod = 5 * kUsPerSecond;         // consolidation check period
constexpr double kScaleUtil = 0.5;                          // target utilisation after draining
constexpr double kMaxUtil = 0.6;                            // most a GPU's functions may use
constexpr double kUnknownUtil = 0.2;                        // assumed before any gap is seen
constexpr double kMissBudget = 0.001;  // collisions: SLO misses sharing may cause a function
constexpr Duration kPrefetchMinGap = 10 * kUsPerSecond;     // shortest period worth evicting for
constexpr Duration kRetry = 1'000;  // nothing fits anywhere: retry after this, doubling
constexpr Duration kHoldSlices = 4;  // HoldBound(): slices a waiter may queue behind re-grants
// corun: the SLO check uses the predicted slowdown's mean + kCorunSd standard deviations; a set
// co-runs only when its members' predicted rates add up to at least kCorunPays (time slicing
// does 1: co-running must do clearly more work per GPU-second); a co-run burst whose latency
// passes kCorunThreat x its SLO, with co-running having cost it more than kCorunCost x its SLO,
// revokes co-running for its pairs (CorunBook's back-off).
constexpr double kCorunSd = 2.0;
constexpr double kCorunPays = 1.15;
constexpr double kCorunThreat = 0.9;
constexpr double kCorunCost = 0.05;
// corun: a function's load stretched by its predicted slowdown (utilisation x mean) must stay
// below this, or its own queue would grow (an instance at 0.5 load slowed 2x never catches up).
constexpr double kCorunMaxLoad = 0.7;
// corun_pack: a set whose members all keep a slowdown <= kHarmless running at once, by the
// contention model and the learned prediction both, "slows none of them" (SlackScheduler::
// Harmless, SlowsNone in interference.h): placement may pack it beyond the typical
// rule, and dispatch co-runs it through back-offs (docs/scheduling.md, "the harmless waiver").
constexpr double kHarmless = 1.02;

class SlackScheduler final : public PolicyBase {
 public:
  SlackScheduler(const std::string& name, const PolicyConfig& config, const SlackOptions& options)
      : PolicyBase(name, config), opt_(options), corun_(config.gpus.size()) {
    rule_ = opt_.learned ? PaddingRule{0.95, 0.0} : PaddingRule{0.9, config.padding};
    safety_ = opt_.learned ? PaddingRule{0.9, 0.0} : rule_;
    busy_.assign(gpus_.size(), 0);
    cost_aware_eviction_ = opt_.residency;
    overrun_estimate_ = opt_.rescue;
  }

 private:
  Duration Predict(FunctionId f) const override { return fns_[f].exec.Predict(rule_); }
  // The execution time used to judge whether a swap is SLO-safe (risk classification).
  Duration Risky(FunctionId f) const { return fns_[f].exec.Predict(safety_); }
  Duration Typical(FunctionId f) const { return fns_[f].exec.Quantile(0.5); }
  size_t OwnEntries() const override { return blocked_.size() + corun_.entries(); }

 public:
  ShareClass ShareFor(FunctionId f) const override {
    if (f >= fns_.size() || !fns_[f].registered) return ShareClass{};
    return ShareForSpec(fns_[f].spec);
  }
  ShareClass ShareForSpec(const FunctionSpec& spec) const override {
    if (!opt_.corun) return ShareClass{};
    return CorunBook::ShareOf(spec);
  }
  CorunStats corun_stats() const override { return corun_.stats(); }

 private:
  // ---- corun (co-running on GPUs marked GpuSpec::corun) ----
  bool CorunGpu(GpuId g) const { return opt_.corun && gpus_[g].spec.corun; }
  bool SameDomain(FunctionId a, FunctionId b) const {
    return config_.corun_across_domains || fns_[a].spec.fault_domain == fns_[b].spec.fault_domain;
  }
  // Whether f, starting at `start`, may run beside `holders` on g: one fault domain, no
  // back-off, the GPU's client limit, the set's predicted rates add up to kCorunPays, and the
  // predicted slowdowns (mean + kCorunSd sd) keep f's burst and each holder's rest within
  // their deadlines (a holder that cannot make its deadline even alone is not held against f).
  bool CorunFits(Time now, FunctionId f, GpuId g, const std::vector<FunctionId>& holders,
                 Time start) const {
    if (holders.empty() || fns_[f].pending.empty()) return false;
    // Back-offs follow revocations, which a set that slows none of its members never causes
    // (OnCorunBurstEnd): such a set co-runs regardless (corun_pack only).
    std::vector<FunctionId> everyone = holders;
    everyone.push_back(f);
    const bool harmless = opt_.corun_pack && Harmless(everyone);
    if (!harmless && corun_.GpuBackedOff(g, now)) return false;
    // A function whose demand is unknown fills the GPU (FunctionSpec's default): it never
    // co-runs, neither joining nor as the holder others would join (beside one, a small joiner
    // looked as if it paid, and the arbiter, which refuses holders that are not MPS clients,
    // was asked again and again).
    if (fns_[f].spec.compute_demand >= 1.0) return false;
    for (FunctionId h : holders)
      if (fns_[h].spec.compute_demand >= 1.0) return false;
    // Under aggressive, only functions it has learned (Learned) co-run: before, a utilisation
    // and a typical burst taken from priors let sets co-run in a workload's first minutes that
    // were then revoked, and the back-offs moved later placements (the trace: +1.26% GPU time).
    if (!opt_.corun_pack) {
      if (!Learned(f)) return false;
      for (FunctionId h : holders)
        if (!Learned(h)) return false;
    }
    if (holders.size() + 1 > gpus_[g].spec.max_clients) return false;
    std::vector<Corunner> set{corun_.Of(f, fns_[f].spec)};
    for (FunctionId h : holders) {
      if (h == f || !SameDomain(f, h) || (!harmless && corun_.BackedOff(f, h, now))) return false;
      set.push_back(corun_.Of(h, fns_[h].spec));
    }
    double rates = 0;
    std::vector<double> bound(set.size()), means(set.size());
    for (size_t i = 0; i < set.size(); ++i) {
      const Slowdown s = corun_.predictor().Predict(QueryAmong(set, i));
      rates += 1.0 / s.mean;
      means[i] = s.mean;
      bound[i] = s.Bound(kCorunSd);
    }
    if (rates < kCorunPays) return false;
    if (Utilisation(f) * means[0] > kCorunMaxLoad) return false;
    const Fn& fn = fns_[f];
    // f's whole backlog, each burst slowed at the bound, meets the last one's deadline.
    const double f_work = static_cast<double>(Predict(f)) * static_cast<double>(fn.pending.size());
    // Under corun_pack, unless it would miss that deadline waiting for the GPU too, and
    // co-running (at the mean) ends its backlog no later than waiting would: refusing then
    // only makes it later, and its queue grows behind the holder's burst.
    if (start + static_cast<Time>(f_work * bound[0]) > fn.pending.back() + fn.spec.slo - kMargin) {
      const Time waited = TenantEnd(now, g) + static_cast<Time>(f_work);
      if (!opt_.corun_pack || waited <= fn.pending.back() + fn.spec.slo - kMargin ||
          start + static_cast<Time>(f_work * means[0]) > waited) {
        return false;
      }
    }
    for (size_t i = 0; i < holders.size(); ++i) {
      const Fn& h = fns_[holders[i]];
      if (!h.running) continue;
      if (Utilisation(holders[i]) * means[i + 1] > kCorunMaxLoad) return false;
      // Its burst's rest and the bursts queued behind it (a holder that cannot make its
      // deadline even alone is not held against f).
      const double left = std::max(0.0, static_cast<double>(h.grant_pred) - corun_.DoneAt(holders[i], now)) +
                          static_cast<double>(Predict(holders[i])) * static_cast<double>(h.pending.size() - 1);
      const Time last = h.pending.back() + h.spec.slo;
      if (now + static_cast<Time>(left) > last) continue;
      if (now + static_cast<Time>(left * bound[i + 1]) > last - kMargin) return false;
    }
    return true;
  }
  // Whether f's execution time and arrival rate are learned rather than assumed: the predictor
  // has seen ExecPredictor::kMinSamples bursts (before, it answers from the spec's prior) and at
  // least one gap between requests (before, Utilisation is kUnknownUtil).
  bool Learned(FunctionId f) const {
    return fns_[f].exec.samples() >= ExecPredictor::kMinSamples && fns_[f].arrivals.gaps() > 0;
  }
  // Placement and scale-down count on co-running (issue 20, item 5): f may share g beyond time
  // slicing's rules (Compatible) when g is marked corun and f with all of g's functions would
  // co-run (CorunBook::Packs: each keeps rate >= kPackRate, load <= kMaxUtil and its SLO at mean
  // + kCorunSd sd, all of them running at once). Never with a function whose compute demand or
  // arrival rate is unknown, across fault domains, past the client limit, or for a pair or GPU
  // in back-off: dispatch would then time-slice the set it was packed for. And only where the
  // typical rule holds (TypicalFits), or the set is harmless (Harmless: dispatch then co-runs it
  // through back-offs, and its time-sliced load stays within kMaxUtil): dispatch may refuse a
  // co-run grant (a back-off after a revocation, a backlog), and the request then waits for the
  // holder's burst; without either rule, seed 3 lost 0.8-3.3 points of SLO attainment to such
  // waits (docs/scheduling.md).
  bool CorunPacks(Time now, FunctionId f, GpuId g) const {
    if (!opt_.corun_pack || !CorunGpu(g) || corun_.GpuBackedOff(g, now)) return false;
    const Gpu& gpu = gpus_[g];
    if (gpu.members.size() + 1 > gpu.spec.max_clients) return false;
    auto known = [&](FunctionId m) {
      return fns_[m].spec.compute_demand < 1.0 && fns_[m].arrivals.gaps() > 0;
    };
    if (!known(f)) return false;
    std::vector<FunctionId> set{f};
    bool untypical = false;  // some member's typical burst does not fit in the other's slack
    for (FunctionId m : gpu.members) {
      if (m == f) continue;
      if (!known(m) || !SameDomain(f, m)) return false;
      untypical = untypical || !TypicalFits(f, m);
      for (FunctionId o : set) {
        if (corun_.BackedOff(o, m, now)) return false;
      }
      set.push_back(m);
    }
    if (set.size() < 2 || (untypical && !Harmless(set))) return false;
    // And the set's mean load (mean burst / mean gap), were dispatch to time-slice it, stays
    // below saturation: without this bound, held-out seed 5 ran one queue away (SLO 48.4%).
    double load = 0;
    for (FunctionId m : set) load += fns_[m].exec.ExpectedExcess(0) / fns_[m].arrivals.MeanGap();
    if (load > (untypical ? kMaxUtil : 1.0)) return false;
    std::vector<PackMember> pack;
    for (FunctionId m : set) {
      pack.push_back({corun_.Of(m, fns_[m].spec), Utilisation(m), Predict(m), fns_[m].spec.slo});
    }
    return corun_.Packs(pack, kCorunSd, kMaxUtil, kMargin);
  }
  // Whether the functions of `set`, all running at once, slow none of them (slowdown <=
  // kHarmless each, by the model and the predictor).
  bool Harmless(const std::vector<FunctionId>& set) const {
    std::vector<Corunner> all;
    for (FunctionId m : set) all.push_back(corun_.Of(m, fns_[m].spec));
    return SlowsNone(corun_.predictor(), all, kHarmless);
  }
  bool MayCorun(Time now, FunctionId f, GpuId g) override {
    if (!CorunGpu(g) || !Usable(g)) return false;
    return CorunFits(now, f, g, Holders(g), now);
  }
  void OnRegistered(Time /*now*/, FunctionId f) override { corun_.Register(f, fns_[f].spec); }

  void OnCorunChange(Time now, GpuId g, FunctionId joined) override {
    const std::vector<FunctionId> holders = Holders(g);
    for (FunctionId h : holders) {
      if (h == joined) {
        corun_.Start(h, now);
      } else {
        corun_.Advance(h, now);
      }
    }
    std::vector<Corunner> set;
    for (FunctionId h : holders) set.push_back(corun_.Of(h, fns_[h].spec));
    for (size_t i = 0; i < holders.size(); ++i) {
      const CorunQuery q = QueryAmong(set, i);
      corun_.SetRate(holders[i], 1.0 / corun_.predictor().Predict(q).mean);
      if (holders[i] == joined) {
        std::vector<FunctionId> others;
        for (FunctionId h : holders) {
          if (h != joined) others.push_back(h);
        }
        corun_.Joined(joined, q, others);
      } else {
        corun_.SetChanged(holders[i], joined == kNoFunction ? std::vector<FunctionId>{}
                                                            : std::vector<FunctionId>{joined});
      }
    }
    if (joined != kNoFunction) ++corun_.stats().grants;
    Gpu& gpu = gpus_[g];
    if (gpu.tenant != kNoFunction && fns_[gpu.tenant].running) {
      const Fn& t = fns_[gpu.tenant];
      const double left = std::max(0.0, static_cast<double>(t.grant_pred) - corun_.done(gpu.tenant));
      gpu.tenant_end = now + static_cast<Duration>(left / corun_.rate(gpu.tenant));
    }
  }

  void OnCorunBurstEnd(Time now, FunctionId f, GpuId g, const BurstEnd& e) override {
    corun_.Advance(f, now);
    if (!e.corun) return corun_.EndBurst(f);  // it ran alone after all (policy_base.cc)
    const Fn& fn = fns_[f];
    const double observed = static_cast<double>(e.gpu_time) / static_cast<double>(std::max<Duration>(1, Typical(f)));
    if (corun_.clean(f)) corun_.predictor().Observe(corun_.query(f), observed);
    if (!fn.pending.empty() && !corun_.partners(f).empty()) {
      const Duration latency = now - fn.pending.front();
      // What co-running added to the burst: its time held beyond a typical solo burst.
      const double stretch = static_cast<double>(e.gpu_time - Typical(f));
      if (static_cast<double>(latency) > kCorunThreat * static_cast<double>(fn.spec.slo) &&
          stretch > kCorunCost * static_cast<double>(fn.spec.slo) && ModelBlames(f)) {
        corun_.Revoke(f, g, now, /*gpu_too=*/latency > fn.spec.slo);
      }
    }
    corun_.EndBurst(f);
  }

  // Whether a late co-run burst of f may be blamed on co-running: always, except under
  // corun_pack, where the predictor must expect its partners to add more than half of
  // kCorunCost x SLO to a typical burst. A function with bursts of high variance (an LLM: cv
  // 0.5) is otherwise revoked for its own long bursts, and the back-off then time-slices the
  // set placement packed (short bursts waiting for whole long ones).
  bool ModelBlames(FunctionId f) const {
    if (!opt_.corun_pack) return true;
    std::vector<Corunner> set{corun_.Of(f, fns_[f].spec)};
    for (FunctionId p : corun_.partners(f)) set.push_back(corun_.Of(p, fns_[p].spec));
    const double added = static_cast<double>(Typical(f)) * (corun_.predictor().Predict(QueryAmong(set, 0)).mean - 1.0);
    return added > 0.5 * kCorunCost * static_cast<double>(fns_[f].spec.slo);
  }
  Evict evict_mode() const override { return opt_.deep_evict ? Evict::kParkFirst : Evict::kDeep; }

  // Predicted swap-in from the host on the link of the GPU f was last on (else the first), at
  // the bandwidth learned from completed swap-ins (the configured one until then).
  Duration HostSwap(FunctionId f) const {
    const GpuId g = fns_[f].last_gpu != kNoGpu ? fns_[f].last_gpu : 0;
    const Transfer t = SwapInCost(fns_[f].spec, Residency::kHost, kNoGpu, g, gpus_[g].spec);
    return gpus_[g].spec.restore_overhead +
           static_cast<Duration>(static_cast<double>(t.bytes) / LinkSpeed(g));
  }
  // Deep eviction is SLO-safe when a restore from the host still meets the SLO.
  bool DeepSafe(FunctionId f) const { return HostSwap(f) + Risky(f) <= fns_[f].spec.slo; }
  bool ParkSafe(FunctionId f) const {
    const Fn& fn = fns_[f];
    const GpuId g = fn.gpu != kNoGpu ? fn.gpu : 0;
    const Transfer t = SwapInCost(fn.spec, Residency::kParked, g, g, gpus_[g].spec);
    return static_cast<Duration>(static_cast<double>(t.bytes) / LinkSpeed(g)) +
               Risky(f) <= fn.spec.slo;
  }

  // A victim whose restore from the host would miss its SLO (a cache-queue function loaded
  // before the link's real bandwidth was known, so not pinned) costs as much as a thousand
  // ordinary ones: it is evicted only when nothing else makes the room.
  double EvictionCost(Time now, FunctionId f, uint64_t bytes) const override {
    const double cost = PolicyBase::EvictionCost(now, f, bytes);
    return DeepSafe(f) ? cost : 1000 * cost;
  }

  void OnStarted(Time now) override {
    if (opt_.scale) WakeAt(now + kScalePeriod, kNoFunction, kTagScale);
  }

  // Where f's state is, or was last (the live arbiter may still hold its vGPU there).
  bool Home(FunctionId f, GpuId g) const {
    const Fn& fn = fns_[f];
    return fn.gpu == g || (fn.gpu == kNoGpu && fn.last_gpu == g);
  }

  // A feasible active GPU for f (memory reclaimable, predicted finish by `deadline`), or kNoGpu.
  // With `residency`, in this order: home if f fits there without evicting anyone; a GPU where
  // it fits in free memory (the fullest: packing); the GPU where making room costs least
  // (RoomCost: the bytes the victims would likely have to bring back; home, then the fullest
  // among equals). Evicting to go home while another GPU has room would move the victims
  // instead, and they evict others in turn: in the demo three berts and an llm kept evicting
  // each other on one GPU while the other had room.
  // `fits_only`: only GPUs where f fits without evicting anyone.
  // When even the shortest swap-in elsewhere (MinSwapElsewhere) would miss the deadline, every
  // GPU but f's own fails the deadline test below, and only that one is looked at: most calls
  // (Relocate's, a function too large to move in time) then cost O(1) instead of O(active GPUs).
  GpuId Choose(Time now, FunctionId f, Time deadline, bool fits_only = false) const {
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

  // Long-run GPU utilisation of f: typical burst / mean inter-arrival gap; until a gap is known,
  // a cautious kUnknownUtil.
  double Utilisation(FunctionId f) const {
    const double gap = fns_[f].arrivals.MeanGap();
    return gap > 0 ? static_cast<double>(Typical(f)) / gap : kUnknownUtil;
  }

  // Arrivals per microsecond of f (from its mean gap; until one is known, the rate at which a
  // typical burst would use kUnknownUtil of a GPU).
  double Rate(FunctionId f) const {
    const double gap = fns_[f].arrivals.MeanGap();
    return gap > 0 ? 1.0 / gap : kUnknownUtil / static_cast<double>(std::max<Duration>(1, Typical(f)));
  }

  // The fraction of `victim`'s requests that a burst of `other` (bursts are not preempted)
  // would push past their SLO: a request arriving at a random moment lands inside one of
  // other's bursts with probability rate x length and waits for the rest of it (uniform), so
  // it misses with rate x E[max(0, L - slack)], slack = victim's SLO - its typical execution.
  double Collisions(FunctionId victim, FunctionId other) const {
    const Duration slack = std::max<Duration>(0, fns_[victim].spec.slo - Typical(victim));
    return Rate(other) * fns_[other].exec.ExpectedExcess(slack);
  }

  // Whether f can share g for good: with `typical`, a typical burst of each of g's functions
  // fits in f's slack and f's typical burst fits in each of theirs (bursts are not preempted);
  // with `collisions`, the misses their bursts would cause each other (Collisions) stay within
  // kMissBudget for f and for each of them (this catches frequent short collisions that the
  // typical rule allows); and their combined utilisation leaves g room (queues stay short).
  // Where they fail, co-running may still fit f there (CorunPacks).
  bool Compatible(Time now, FunctionId f, GpuId g) const {
    return TimeSliced(f, g) || CorunPacks(now, f, g);
  }
  // The typical rule: a typical burst of each fits in the other's slack (SLO - typical burst).
  bool TypicalFits(FunctionId f, FunctionId m) const { return TypicalFits(f, Typical(f), m); }
  // The same with f's typical burst `ef` already known (TimeSliced asks for every member).
  bool TypicalFits(FunctionId f, Duration ef, FunctionId m) const {
    const Duration em = Typical(m);
    return em <= fns_[f].spec.slo - ef && ef <= fns_[m].spec.slo - em;
  }
  bool TimeSliced(FunctionId f, GpuId g) const {
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

  // EDF (least slack first) with the holding bound (docs/arbiter.md, "Fairness: how long a
  // tenant holds a GPU others wait for"). A burst that held a GPU and yielded with work left
  // (a slice end, a preemption: `yielded`) and can no longer meet its deadline ranks behind
  // every other ready function, and such bursts take turns (the longest queued first):
  // otherwise a tenant that never idles keeps one burst whose slack only falls the longer it
  // holds, and wins every re-grant. And a yielded burst, late or not, is re-granted ahead of a
  // waiter only while that waiter has queued for less than HoldBound(): whatever the SLOs, a
  // waiter behind a yielding holder is granted within about HoldBound() + one slice.
  size_t PickReady(Time now, GpuId g) const override {
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
  // How long a waiter may queue behind re-grants of a yielding holder: kHoldSlices slices.
  Duration HoldBound() const { return kHoldSlices * config_.slice; }

  // A resident function whose GPU is now too busy to meet this burst's deadline moves to a GPU
  // that can (keeps shared GPUs from overloading when utilisation estimates were wrong).
  bool Relocate(Time now, FunctionId f) override {
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

  void Load(Time now, FunctionId f, GpuId g) {
    (void)MakeRoom(now, g, Need(f, g), evict_mode());
    SwapIn(now, f, g);
    if (!DeepSafe(f)) Pin(f, true);  // cache queue: keep a resident slice
  }

  void Place(Time now, FunctionId f) override {
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

  // Whether some usable GPU is off (could be activated for f).
  bool HasInactiveUsableGpu() const {
    const auto available = static_cast<size_t>(AvailableGpus());
    if (available > active_gpus().size()) return true;  // the common case: no scan
    const auto usable_active = static_cast<size_t>(std::count_if(
        active_gpus().begin(), active_gpus().end(), [&](GpuId g) { return Usable(g); }));
    return available > usable_active;
  }

  // Slack is gone: a feasible active GPU, else a new one, else the least bad active one.
  void PlaceNow(Time now, FunctionId f, Time deadline) {
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

  // No GPU meets f's deadline and none can be activated: the active GPU where f starts
  // earliest. With `residency`, GPUs where it fits without evicting anyone come first, then the
  // one where making room costs least (earliest start among equals): f is late anyway, and
  // evicting others to gain a little would make them late in turn. Without `pinned_too`, only
  // GPUs where that needs no pinned victim.
  GpuId LeastBad(Time now, FunctionId f, bool pinned_too) const {
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

  void OnBurstDone(Time now, FunctionId f, GpuId g) override {
    if (opt_.rescue && gpus_[g].tenant == kNoFunction) CancelGpuWake(g, kTagOverrun);  // no overrun
    busy_[g] += now - fns_[f].grant_time;
    AfterBurst(now, f, g);
    RetryBlocked(now);
  }

  // Functions that found no GPU with enough reclaimable memory (every byte held by functions
  // with work) are placed again as soon as a burst ends, not only when their backoff timer
  // fires (up to a second later): the function that just finished may now make room. This is
  // what a swapped-out waiter on an oversubscribed GPU needs: preempting the holder at its
  // slice end would not help it (a function with an outstanding burst is never evicted).
  void RetryBlocked(Time now) {
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

  void AfterBurst(Time now, FunctionId f, GpuId g) {
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

  void OnGone(Time /*now*/, FunctionId f) override {
    blocked_.erase(std::remove(blocked_.begin(), blocked_.end(), f), blocked_.end());
    corun_.Forget(f);
  }

  void OnPrefetched(Time now, FunctionId f) override { ArmIdle(now + FirstIdleStep(f), f); }

  // Few idle wakeups per function: a later one than the pending one is not queued (the pending
  // one re-arms itself from last_use when it fires).
  void ArmIdle(Time at, FunctionId f) {
    if (at >= fns_[f].idle_wake) return;
    fns_[f].idle_wake = at;
    WakeAt(at, f, kTagIdle);
  }

  Duration ParkAfter(FunctionId f) const {
    const Fn& fn = fns_[f];
    if (fn.arrivals.gaps() == 0) return 10 * kUsPerSecond;
    return std::clamp<Duration>(static_cast<Duration>(2 * fn.arrivals.MeanGap()), kUsPerSecond,
                                60 * kUsPerSecond);
  }
  Duration DeepAfter(FunctionId f) const {
    if (!opt_.deep_evict) return DeepSafe(f) ? kShareIdleTtl : config_.keepalive_ttl;
    return DeepSafe(f) ? ParkAfter(f) + 10 * kUsPerSecond : config_.keepalive_ttl;
  }
  Duration FirstIdleStep(FunctionId f) const {
    return opt_.deep_evict ? ParkAfter(f) : DeepAfter(f);
  }

  void IdleStep(Time now, FunctionId f) {
    Fn& fn = fns_[f];
    if (!fn.idle() || fn.queued || fn.waiting || fn.where == Residency::kHost ||
        gpus_[fn.gpu].tenant == f || !Movable(f)) {
      return;  // (pinned to its GPU: it stays resident, no idle wakeups again)
    }
    const Duration idle_for = now - fn.last_use;
    if (idle_for >= DeepAfter(f)) return DeepEvict(now, f);
    if (opt_.deep_evict && fn.where == Residency::kResident && idle_for >= ParkAfter(f) &&
        ParkSafe(f)) {
      if (fn.pinned) Pin(f, false);
      SwapOut(now, f);
    }
    const Duration next = (opt_.deep_evict && fn.where == Residency::kResident && idle_for < ParkAfter(f))
                              ? ParkAfter(f)
                              : DeepAfter(f);
    ArmIdle(fn.last_use + next, f);
  }

  void OnWake(Time now, FunctionId f, uint32_t tag) override {
    switch (tag) {
      case kTagSlack: {
        Fn& fn = fns_[f];
        if (!fn.waiting || fn.held) return;
        fn.waiting = false;
        if (fn.pending.empty() || fn.transfer) return;
        if (fn.where == Residency::kResident) return Enqueue(now, f, fn.gpu);
        return PlaceNow(now, f, fn.deadline());
      }
      case kTagIdle:
        if (now >= fns_[f].idle_wake) fns_[f].idle_wake = kNever;
        return IdleStep(now, f);
      case kTagPrefetch: {
        Fn& fn = fns_[f];
        if (fn.where != Residency::kHost || fn.transfer || fn.waiting || !fn.pending.empty()) return;
        return PlaceNow(now, f, fn.arrivals.NextArrival() + fn.spec.slo);
      }
      case kTagScale:
        Consolidate(now);
        WakeAt(now + kScalePeriod, kNoFunction, kTagScale);
        return;
      case kTagRelease:
        if (gpus_[f].active && gpus_[f].empty()) Release(f);
        return;
      case kTagOverrun:
        return CheckOverrun(now, f);
      default:
        return;
    }
  }

  // `rescue`: look at g again when its tenant's burst is predicted to end.
  void OnGranted(Time now, FunctionId f, GpuId g) override {
    if (CorunGpu(g)) corun_.Start(f, now);
    if (opt_.rescue) WakeGpuAt(gpus_[g].tenant_end + kMargin, g, kTagOverrun);
  }

  // g's tenant may have overrun its prediction: if so, move the functions queued behind it that
  // would now miss their deadline (TenantEnd: it runs as long again) to an active GPU where they
  // fit without evicting anyone and are predicted to meet it (Choose), in queue order; pinned
  // ones (the cache queue: they cannot afford a swap) stay. Then look again when the first one
  // left would start to miss (or, at the latest, when the tenant has run half as long again).
  void CheckOverrun(Time now, GpuId g) {
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

  void OnGpuEmpty(Time now, GpuId g) override {
    if (opt_.release) return Release(g);
    WakeGpuAt(now + kReleaseDelay, g, kTagRelease);
  }

  bool Drainable(GpuId g) const {
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

  // Whether every function on `victim` would fit, resident, in the free memory of the other
  // usable active GPUs (first fit, largest first) without evicting anyone: draining a GPU
  // whose functions cannot all live elsewhere only makes them evict each other later.
  bool FitsElsewhere(GpuId victim) const {
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

  // Scale down: when the other active GPUs could carry the recent load at kScaleUtil, move the
  // functions of the least-used drainable GPU away (deep-evict the SLO-safe ones, migrate the
  // rest), so it empties and is released.
  void Consolidate(Time now) {
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

  SlackOptions opt_;
  CorunBook corun_;
  PaddingRule rule_;
  PaddingRule safety_;
  std::vector<Duration> busy_;  // GPU time granted per GPU in the current scale period
  std::vector<FunctionId> blocked_;  // placements backing off for memory (RetryBlocked)
};

}  // namespace

std::unique_ptr<Policy> MakeSlackScheduler(const std::string& name, const PolicyConfig& config,
                                           const SlackOptions& options) {
  return std::make_unique<SlackScheduler>(name, config, options);
}

}  // namespace gshare::policy::internal
