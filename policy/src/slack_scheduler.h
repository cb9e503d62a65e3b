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
//
// The class, its constants and the time-slicing rules; its methods are defined by
// responsibility: slack_scheduler.cc (construction, dispatch, bursts, overruns),
// slack_placement.cc (where a function goes: GPU choice, compatibility, loading),
// slack_idle.cc (what idle functions become: parked, deep-evicted, prefetched),
// slack_scale.cc (draining lightly used GPUs) and slack_corun.cc (co-running under MPS).
// Internal to the policy library (policies.h makes it).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "corun.h"
#include "policies.h"
#include "policy_base.h"

namespace gshare::policy::internal {

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
  SlackScheduler(const std::string& name, const PolicyConfig& config, const SlackOptions& options);

 private:
  Duration Predict(FunctionId f) const override { return fns_[f].exec.Predict(rule_); }
  // The execution time used to judge whether a swap is SLO-safe (risk classification).
  Duration Risky(FunctionId f) const { return fns_[f].exec.Predict(safety_); }
  Duration Typical(FunctionId f) const { return fns_[f].exec.Quantile(0.5); }
  size_t OwnEntries() const override { return blocked_.size() + corun_.entries(); }

 public:
  ShareClass ShareFor(FunctionId f) const override;
  ShareClass ShareForSpec(const FunctionSpec& spec) const override;
  CorunStats corun_stats() const override { return corun_.stats(); }

 private:
  // ---- corun (co-running on GPUs marked GpuSpec::corun) ----
  bool CorunGpu(GpuId g) const { return opt_.corun && gpus_[g].spec.corun; }
  bool SameDomain(FunctionId a, FunctionId b) const;
  // Whether f, starting at `start`, may run beside `holders` on g: one fault domain, no
  // back-off, the GPU's client limit, the set's predicted rates add up to kCorunPays, and the
  // predicted slowdowns (mean + kCorunSd sd) keep f's burst and each holder's rest within
  // their deadlines (a holder that cannot make its deadline even alone is not held against f).
  bool CorunFits(Time now, FunctionId f, GpuId g, const std::vector<FunctionId>& holders,
                 Time start) const;
  // Whether f's execution time and arrival rate are learned rather than assumed: the predictor
  // has seen ExecPredictor::kMinSamples bursts (before, it answers from the spec's prior) and at
  // least one gap between requests (before, Utilisation is kUnknownUtil).
  bool Learned(FunctionId f) const;
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
  bool CorunPacks(Time now, FunctionId f, GpuId g) const;
  // Whether the functions of `set`, all running at once, slow none of them (slowdown <=
  // kHarmless each, by the model and the predictor).
  bool Harmless(const std::vector<FunctionId>& set) const;
  bool MayCorun(Time now, FunctionId f, GpuId g) override;
  void OnRegistered(Time /*now*/, FunctionId f) override { corun_.Register(f, fns_[f].spec); }

  void OnCorunChange(Time now, GpuId g, FunctionId joined) override;

  void OnCorunBurstEnd(Time now, FunctionId f, GpuId g, const BurstEnd& e) override;

  // Whether a late co-run burst of f may be blamed on co-running: always, except under
  // corun_pack, where the predictor must expect its partners to add more than half of
  // kCorunCost x SLO to a typical burst. A function with bursts of high variance (an LLM: cv
  // 0.5) is otherwise revoked for its own long bursts, and the back-off then time-slices the
  // set placement packed (short bursts waiting for whole long ones).
  bool ModelBlames(FunctionId f) const;
  Evict evict_mode() const override { return opt_.deep_evict ? Evict::kParkFirst : Evict::kDeep; }

  // Predicted swap-in from the host on the link of the GPU f was last on (else the first), at
  // the bandwidth learned from completed swap-ins (the configured one until then).
  Duration HostSwap(FunctionId f) const;
  // Deep eviction is SLO-safe when a restore from the host still meets the SLO.
  bool DeepSafe(FunctionId f) const { return HostSwap(f) + Risky(f) <= fns_[f].spec.slo; }
  bool ParkSafe(FunctionId f) const;

  // A victim whose restore from the host would miss its SLO (a cache-queue function loaded
  // before the link's real bandwidth was known, so not pinned) costs as much as a thousand
  // ordinary ones: it is evicted only when nothing else makes the room.
  double EvictionCost(Time now, FunctionId f, uint64_t bytes) const override;

  void OnStarted(Time now) override;

  // Where f's state is, or was last (the live arbiter may still hold its vGPU there).
  bool Home(FunctionId f, GpuId g) const;

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
  GpuId Choose(Time now, FunctionId f, Time deadline, bool fits_only = false) const;

  // Long-run GPU utilisation of f: typical burst / mean inter-arrival gap; until a gap is known,
  // a cautious kUnknownUtil.
  double Utilisation(FunctionId f) const;

  // Arrivals per microsecond of f (from its mean gap; until one is known, the rate at which a
  // typical burst would use kUnknownUtil of a GPU).
  double Rate(FunctionId f) const;

  // The fraction of `victim`'s requests that a burst of `other` (bursts are not preempted)
  // would push past their SLO: a request arriving at a random moment lands inside one of
  // other's bursts with probability rate x length and waits for the rest of it (uniform), so
  // it misses with rate x E[max(0, L - slack)], slack = victim's SLO - its typical execution.
  double Collisions(FunctionId victim, FunctionId other) const;

  // Whether f can share g for good: with `typical`, a typical burst of each of g's functions
  // fits in f's slack and f's typical burst fits in each of theirs (bursts are not preempted);
  // with `collisions`, the misses their bursts would cause each other (Collisions) stay within
  // kMissBudget for f and for each of them (this catches frequent short collisions that the
  // typical rule allows); and their combined utilisation leaves g room (queues stay short).
  // Where they fail, co-running may still fit f there (CorunPacks).
  bool Compatible(Time now, FunctionId f, GpuId g) const;
  // The typical rule: a typical burst of each fits in the other's slack (SLO - typical burst).
  bool TypicalFits(FunctionId f, FunctionId m) const { return TypicalFits(f, Typical(f), m); }
  // The same with f's typical burst `ef` already known (TimeSliced asks for every member).
  bool TypicalFits(FunctionId f, Duration ef, FunctionId m) const;
  bool TimeSliced(FunctionId f, GpuId g) const;

  // EDF (least slack first) with the holding bound (docs/arbiter.md, "Fairness: how long a
  // tenant holds a GPU others wait for"). A burst that held a GPU and yielded with work left
  // (a slice end, a preemption: `yielded`) and can no longer meet its deadline ranks behind
  // every other ready function, and such bursts take turns (the longest queued first):
  // otherwise a tenant that never idles keeps one burst whose slack only falls the longer it
  // holds, and wins every re-grant. And a yielded burst, late or not, is re-granted ahead of a
  // waiter only while that waiter has queued for less than HoldBound(): whatever the SLOs, a
  // waiter behind a yielding holder is granted within about HoldBound() + one slice.
  size_t PickReady(Time now, GpuId g) const override;
  // How long a waiter may queue behind re-grants of a yielding holder: kHoldSlices slices.
  Duration HoldBound() const { return kHoldSlices * config_.slice; }

  // A resident function whose GPU is now too busy to meet this burst's deadline moves to a GPU
  // that can (keeps shared GPUs from overloading when utilisation estimates were wrong).
  bool Relocate(Time now, FunctionId f) override;

  void Load(Time now, FunctionId f, GpuId g);

  void Place(Time now, FunctionId f) override;

  // Whether some usable GPU is off (could be activated for f).
  bool HasInactiveUsableGpu() const;

  // Slack is gone: a feasible active GPU, else a new one, else the least bad active one.
  void PlaceNow(Time now, FunctionId f, Time deadline);

  // No GPU meets f's deadline and none can be activated: the active GPU where f starts
  // earliest. With `residency`, GPUs where it fits without evicting anyone come first, then the
  // one where making room costs least (earliest start among equals): f is late anyway, and
  // evicting others to gain a little would make them late in turn. Without `pinned_too`, only
  // GPUs where that needs no pinned victim.
  GpuId LeastBad(Time now, FunctionId f, bool pinned_too) const;

  void OnBurstDone(Time now, FunctionId f, GpuId g) override;

  // Functions that found no GPU with enough reclaimable memory (every byte held by functions
  // with work) are placed again as soon as a burst ends, not only when their backoff timer
  // fires (up to a second later): the function that just finished may now make room. This is
  // what a swapped-out waiter on an oversubscribed GPU needs: preempting the holder at its
  // slice end would not help it (a function with an outstanding burst is never evicted).
  void RetryBlocked(Time now);

  void AfterBurst(Time now, FunctionId f, GpuId g);

  void OnGone(Time /*now*/, FunctionId f) override;

  void OnPrefetched(Time now, FunctionId f) override { ArmIdle(now + FirstIdleStep(f), f); }

  // Few idle wakeups per function: a later one than the pending one is not queued (the pending
  // one re-arms itself from last_use when it fires).
  void ArmIdle(Time at, FunctionId f);

  Duration ParkAfter(FunctionId f) const;
  Duration DeepAfter(FunctionId f) const;
  Duration FirstIdleStep(FunctionId f) const;

  void IdleStep(Time now, FunctionId f);

  void OnWake(Time now, FunctionId f, uint32_t tag) override;

  // `rescue`: look at g again when its tenant's burst is predicted to end.
  void OnGranted(Time now, FunctionId f, GpuId g) override;

  // g's tenant may have overrun its prediction: if so, move the functions queued behind it that
  // would now miss their deadline (TenantEnd: it runs as long again) to an active GPU where they
  // fit without evicting anyone and are predicted to meet it (Choose), in queue order; pinned
  // ones (the cache queue: they cannot afford a swap) stay. Then look again when the first one
  // left would start to miss (or, at the latest, when the tenant has run half as long again).
  void CheckOverrun(Time now, GpuId g);

  void OnGpuEmpty(Time now, GpuId g) override;

  bool Drainable(GpuId g) const;

  // Whether every function on `victim` would fit, resident, in the free memory of the other
  // usable active GPUs (first fit, largest first) without evicting anyone: draining a GPU
  // whose functions cannot all live elsewhere only makes them evict each other later.
  bool FitsElsewhere(GpuId victim) const;

  // Scale down: when the other active GPUs could carry the recent load at kScaleUtil, move the
  // functions of the least-used drainable GPU away (deep-evict the SLO-safe ones, migrate the
  // rest), so it empties and is released.
  void Consolidate(Time now);

  SlackOptions opt_;
  CorunBook corun_;
  PaddingRule rule_;
  PaddingRule safety_;
  std::vector<Duration> busy_;  // GPU time granted per GPU in the current scale period
  std::vector<FunctionId> blocked_;  // placements backing off for memory (RetryBlocked)
};

}  // namespace gshare::policy::internal
