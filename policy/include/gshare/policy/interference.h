// Co-running (spatial sharing under NVIDIA MPS): the analytic contention model shared by the
// policy, gshare-sim and simcuda's MPS mode (docs/scheduling.md, "Co-running: the contention
// model" states the same equations), and the interference predictor that starts from it and
// learns the difference from observed co-run bursts (dlib's kernel ridge regression).
//
// The model (the same as simcuda's MPS mode, docs/simcuda.md). Each co-running function j has
// a compute share s_j (MPS active-thread percentage / 100, fixed when its process starts), a
// compute demand d_j (fraction of the GPU's SMs its kernels fill alone) and a bandwidth demand
// b_j (fraction of the device's peak memory bandwidth it uses alone). Over the set running at
// the same time (i included):
//   a_j    = min(d_j, s_j)                 SMs it may take (a share is a cap, not a reservation)
//   A      = sum_j a_j
//   rho_j  = (a_j / max(1, A)) / d_j       its compute rate (1 = as fast as alone)
//   U      = sum_j b_j * rho_j             memory traffic at those rates, in units of peak
//   rate_i = rho_i / max(1, U)             bandwidth shared in proportion above 100%
//   slowdown_i = 1 / rate_i
// A function alone at full share has rate 1. Two functions that each fill the GPU (d = b = 1,
// the FunctionSpec defaults) get rate 1/2 each: co-running them is no better than time
// slicing.
//
// Thread-safety: the model functions are pure; an InterferencePredictor is a plain value, not
// thread-safe (the policy's one thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gshare/policy/types.h"

namespace gshare::policy {

// Demands below this are read as this (a demand of 0 would divide by zero).
inline constexpr double kMinDemand = 0.01;

// One co-running function as the model sees it.
struct Corunner {
  double share = 1.0;      // s: MPS compute share, (0, 1]
  double compute = 1.0;    // d: compute demand alone, (0, 1]
  double bandwidth = 1.0;  // b: bandwidth demand alone, [0, 1]
};
// From a function's spec and its share class's compute share.
Corunner CorunnerOf(const FunctionSpec& spec, double share);

// The rate (see above) of set[i] while every member of `set` runs. REQUIRES: i < set.size().
double ContentionRate(std::span<const Corunner> set, size_t i);
// 1 / ContentionRate: how much longer than alone at full share set[i]'s burst takes.
double ContentionSlowdown(std::span<const Corunner> set, size_t i);

// A question to the predictor: `self`'s slowdown while `others` run beside it.
struct CorunQuery {
  Corunner self;
  std::vector<Corunner> others;
  // The analytic model's answer for this query.
  double Prior() const;
};

// The predictor's query for set[i] while every member of `set` runs.
CorunQuery QueryAmong(std::span<const Corunner> set, size_t i);

struct Slowdown {
  double mean = 1.0;    // predicted slowdown (>= 1)
  double stddev = 0.0;  // its uncertainty (one standard deviation, in slowdown units)
  // mean + k * stddev: what a policy checks an SLO against.
  double Bound(double k) const { return mean + k * stddev; }
};

// A function's slowdown next to given co-runners: the analytic prior times a learned
// correction, exp(f(x)), where f is a kernel ridge regression (dlib::krr_trainer, radial basis
// kernel) of log(observed / prior) on the query's features (its share, demands, the others'
// summed effective compute and bandwidth, their count). Until the first refit it answers the
// prior exactly. Its uncertainty is the prequential error: an exponentially weighted root mean
// square of log(observed / predicted) measured on each observation before learning from it,
// starting at kPriorLogSd (published predictors land at 6-15% error).
//
// Cost: Predict is O(basis vectors) (at most 32 kernel evaluations, ~0.2 us); Observe is O(1)
// except every kRefitEvery-th call, which refits on the last kWindow observations (~0.5 ms).
class InterferencePredictor {
 public:
  static constexpr size_t kWindow = 96;       // observations kept for refits (a ring)
  static constexpr size_t kRefitEvery = 24;   // refit after this many new observations
  static constexpr size_t kMinSamples = 12;   // no learned correction before this many
  static constexpr double kPriorLogSd = 0.15; // uncertainty before any observation (log units)
  static constexpr double kErrorWeight = 0.05;  // EWMA weight of each new squared error
  static constexpr double kMaxLogCorrection = 1.5;  // |learned log correction| at most this

  InterferencePredictor();
  ~InterferencePredictor();
  InterferencePredictor(InterferencePredictor&&) noexcept;
  InterferencePredictor& operator=(InterferencePredictor&&) noexcept;
  InterferencePredictor(const InterferencePredictor&) = delete;
  InterferencePredictor& operator=(const InterferencePredictor&) = delete;

  Slowdown Predict(const CorunQuery& query) const;
  // `observed`: the slowdown a burst of query.self showed (its time co-run over its solo
  // time). Values below 1 are learned as they are: callers measure against a typical solo
  // burst, not this burst's own solo time, so a ratio is the slowdown times the burst's size
  // noise, and clamping the short bursts' ratios at 1 would teach a slowdown where there is
  // none (an LLM beside a small CNN, truly 1.0, was learned as 1.04-1.5). Predictions stay >= 1.
  void Observe(const CorunQuery& query, double observed);

  size_t observations() const { return observed_; }
  size_t refits() const { return refits_; }
  // The current uncertainty in log units (see above).
  double log_sd() const;

 private:
  struct Model;  // dlib types stay in interference.cc
  void Refit();

  std::unique_ptr<Model> model_;
  size_t observed_ = 0;
  size_t since_refit_ = 0;
  size_t refits_ = 0;
  double sq_error_ = kPriorLogSd * kPriorLogSd;
};

// Whether every member of `set`, all of them running at once, keeps its slowdown within
// `limit` by the contention model (the prior) and by `predictor`'s mean both. A policy that
// waives its safety rules for such a set (aggressive-corun-pack) must not trust a learned
// correction that says "harmless" where the model says otherwise: the corrections come from
// noisy ratios and can fall below the prior (sets truly 1.05-1.1x were packed as harmless and
// cost held-out seed 5 2.5 points of SLO attainment in gshare-sim, where the model is the truth).
bool SlowsNone(const InterferencePredictor& predictor, std::span<const Corunner> set, double limit);

}  // namespace gshare::policy
