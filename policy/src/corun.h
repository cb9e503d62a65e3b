// The co-run bookkeeping of the slack scheduler's `corun` idea (internal header): each
// function's share class, the estimated progress of co-running bursts (processor sharing at the
// predicted rates), the set each burst ran with (the predictor's label, when the set stayed the
// same), back-offs on pairs and GPUs after a revocation, and the counters. The decisions are in
// slack_scheduler.cc; the contention model and the predictor in interference.h.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "gshare/policy/interference.h"
#include "gshare/policy/policy.h"

namespace gshare::policy::internal {

// One function of a GPU as placement sees it when it counts on co-running (CorunBook::Packs).
struct PackMember {
  Corunner corunner;
  double utilisation = 0;  // long-run fraction of the GPU its bursts take alone
  Duration exec = 0;       // its predicted burst alone
  Duration slo = 0;
};

class CorunBook {
 public:
  // Placement may count on co-running only where every member of the set keeps at least this
  // predicted rate with all of them running at once: any two of them then do at least
  // 2 x kPackRate = the dispatch rule's 1.15 of time slicing's work (slack_scheduler.cc,
  // kCorunPays), so whichever subset is running when a request arrives, dispatch finds that
  // joining pays (rates only fall as a set grows).
  static constexpr double kPackRate = 0.575;

  // Back-off after a revocation: kPairBackoff for the pair, doubling for each further one of
  // the same function up to kMaxBackoff; kGpuBackoff for the GPU when the burst missed its SLO.
  static constexpr Duration kPairBackoff = 30 * kUsPerSecond;
  static constexpr Duration kMaxBackoff = 10 * 60 * kUsPerSecond;
  static constexpr Duration kGpuBackoff = 10 * kUsPerSecond;

  explicit CorunBook(size_t gpus) : gpu_backoff_(gpus, 0) {}

  // The share class for a function of `spec`: the smallest quarter of the GPU (25, 50, 75,
  // 100%) that covers its compute demand, so that alone it runs at full speed and next to
  // others it takes no more than its class. No memory limit: gshare's vGPU quota already
  // bounds its device memory.
  static ShareClass ShareOf(const FunctionSpec& spec);

  void Register(FunctionId f, const FunctionSpec& spec);
  void Forget(FunctionId f);  // FunctionGone: drops f and every back-off naming it
  double share(FunctionId f) const { return fns_[f].share; }
  Corunner Of(FunctionId f, const FunctionSpec& spec) const { return CorunnerOf(spec, fns_[f].share); }

  // Progress of a running burst: solo work done on it so far (us), at the predicted rate.
  void Start(FunctionId f, Time now);              // a grant: no work done, rate 1
  void Advance(FunctionId f, Time now);            // accrue work at the current rate up to now
  void SetRate(FunctionId f, double rate) { fns_[f].rate = rate; }
  double rate(FunctionId f) const { return fns_[f].rate; }
  double done(FunctionId f) const { return fns_[f].done; }
  // done() projected to `now` at the current rate.
  double DoneAt(FunctionId f, Time now) const {
    return fns_[f].done + static_cast<double>(now - fns_[f].since) * fns_[f].rate;
  }

  // The set a co-running burst runs with: `clean` while it has stayed the same since f's grant.
  void Joined(FunctionId f, CorunQuery query, const std::vector<FunctionId>& partners);
  void SetChanged(FunctionId f, const std::vector<FunctionId>& partners);
  bool clean(FunctionId f) const { return fns_[f].clean; }
  const CorunQuery& query(FunctionId f) const { return fns_[f].query; }
  const std::vector<FunctionId>& partners(FunctionId f) const { return fns_[f].partners; }
  void EndBurst(FunctionId f);  // forget the burst's set

  bool BackedOff(FunctionId a, FunctionId b, Time now) const;
  bool GpuBackedOff(GpuId g, Time now) const { return now < gpu_backoff_[g]; }
  // Revokes co-running of f with each of its partners (and of the GPU when `gpu_too`).
  void Revoke(FunctionId f, GpuId g, Time now, bool gpu_too);

  // Whether the functions of `set` (a GPU's functions and the newcomer) may share one GPU by
  // co-running where time slicing alone would not fit them: with all of them running at once
  // (the worst case), each keeps a predicted rate >= kPackRate, its load stretched by its mean
  // slowdown (utilisation x mean) stays <= max_load, and its predicted burst at mean + k sd of
  // slowdown meets its SLO less `margin`. The caller checks eligibility (known demands, one
  // fault domain, no back-off, the client limit).
  bool Packs(std::span<const PackMember> set, double k, double max_load, Duration margin) const;

  InterferencePredictor& predictor() { return predictor_; }
  const InterferencePredictor& predictor() const { return predictor_; }
  CorunStats& stats() { return stats_; }
  const CorunStats& stats() const { return stats_; }
  size_t entries() const;

 private:
  struct Fn {
    double share = 1.0;
    double done = 0;     // solo work done on the current burst (us)
    double rate = 1.0;   // predicted rate now
    Time since = 0;      // when `done` was last advanced
    bool clean = false;  // the current burst's set has not changed since its grant
    CorunQuery query;
    std::vector<FunctionId> partners;  // every function it co-ran with on this burst
    std::vector<std::pair<FunctionId, Time>> backoff;  // partner -> until
    int revoked = 0;     // revocations so far (the back-off doubles)
  };
  std::vector<Fn> fns_;
  std::vector<Time> gpu_backoff_;
  InterferencePredictor predictor_;
  CorunStats stats_;
};

}  // namespace gshare::policy::internal
