// Online predictors learned from observed bursts: per-function execution time (a sliding
// window of recent bursts, read as a quantile with a padding rule), per-function inter-arrival
// times (to recognise periodic functions and predict their next arrival), and per-GPU host-link
// bandwidth (from completed transfers; LinkBandwidths: a node's links and the fastest of them).
// Each starts from a prior and adapts.
//
// Thread-safety: plain values; not thread-safe. Observe is O(window) (LinkBandwidths: O(log
// links)); queries are O(1).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "gshare/policy/types.h"

namespace gshare::policy {

// How a predicted execution time is derived from the learned window.
struct PaddingRule {
  double quantile = 0.9;  // quantile of the window
  double pad = 0.4;       // multiply by (1 + pad)
};

// Execution-time predictor for one function. Until `kMinSamples` bursts have been seen it
// answers from the prior (FunctionSpec's p50/p90, read as a log-normal).
class ExecPredictor {
 public:
  static constexpr int kWindow = 32;
  static constexpr int kMinSamples = 4;

  ExecPredictor() = default;
  explicit ExecPredictor(const FunctionSpec& prior);

  void Observe(Duration exec);
  // The predicted execution time under `rule`; always >= 1.
  Duration Predict(const PaddingRule& rule) const;
  // The rule's quantile of the learned window (or of the prior).
  Duration Quantile(double q) const;
  int samples() const { return count_ < kWindow ? count_ : kWindow; }
  // E[max(0, X - s)] for an execution time X of this function: how far a burst overruns `s` on
  // average (0 when none does). From the learned window, else from the prior's quantiles
  // (rounded up: conservative). O(bursts longer than s).
  double ExpectedExcess(Duration s) const;

 private:
  Duration PriorQuantile(double q) const;

  std::array<Duration, kWindow> window_{};  // ring, in arrival order
  std::array<Duration, kWindow> sorted_{};  // the same samples, ascending (first samples() used)
  int count_ = 0;  // total observed (the window holds the last min(count_, kWindow))
  Duration prior_p50_ = 1000;
  Duration prior_p90_ = 1000;
  // Prior quantiles at the levels policies ask for, computed once.
  Duration prior_q50_ = 1000, prior_q90_ = 1000, prior_q95_ = 1000, prior_q99_ = 1000;
};

// Inter-arrival model of one function: the last kWindow gaps.
class ArrivalPredictor {
 public:
  static constexpr int kWindow = 8;

  void Observe(Time arrival);
  Time last() const { return last_; }
  int gaps() const { return count_ < kWindow ? count_ : kWindow; }
  double MeanGap() const;   // 0 without gaps
  double GapCv() const;     // coefficient of variation; 0 with fewer than 2 gaps
  // True when at least kWindow/2 gaps were seen and their CV is below `max_cv` (a timer).
  bool Periodic(double max_cv = 0.1) const;
  // last() + mean gap; kNever without gaps.
  Time NextArrival() const;

 private:
  std::array<Duration, kWindow> gaps_{};
  Duration sum_ = 0;  // of gaps_[0, gaps()): kept with each Observe, so MeanGap is O(1)
  int count_ = 0;
  Time last_ = -1;
};

// Effective host-link bandwidth of one GPU, as an exponentially weighted mean of completed
// transfers (bytes / time on the link). Starts at the configured GpuSpec bandwidth; the first
// completed transfer replaces it, later ones are averaged (weight 0.2).
class BandwidthPredictor {
 public:
  explicit BandwidthPredictor(double prior_bytes_per_us = 24'000.0) : bytes_per_us_(prior_bytes_per_us) {}
  void Observe(uint64_t bytes, Duration link_time);
  double bytes_per_us() const { return bytes_per_us_; }

 private:
  double bytes_per_us_;
  bool observed_ = false;
};

// The BandwidthPredictors of a node's links (one per GPU), and the fastest of their current
// bandwidths, kept up to date with each observation: a bound for placement scans (no link
// copies faster, so no swap-in anywhere is shorter than over this bandwidth).
class LinkBandwidths {
 public:
  LinkBandwidths() = default;
  // One link per prior, starting at that bandwidth (bytes per microsecond).
  explicit LinkBandwidths(const std::vector<double>& priors);
  void Observe(size_t link, uint64_t bytes, Duration link_time);
  const BandwidthPredictor& operator[](size_t link) const { return links_[link]; }
  size_t size() const { return links_.size(); }
  // The largest bytes_per_us() of any link (0 without links).
  double fastest() const { return speeds_.empty() ? 0.0 : *speeds_.rbegin(); }

 private:
  std::vector<BandwidthPredictor> links_;
  std::multiset<double> speeds_;  // every link's bytes_per_us()
};

}  // namespace gshare::policy
