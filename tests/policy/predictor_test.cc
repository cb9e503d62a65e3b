// Tests of the online predictors: execution-time quantiles from the prior and from observed
// bursts, the padding rule, periodic-arrival detection, bandwidth learning; the running sums and
// maxima kept incrementally (the mean gap, the fastest link) against their recomputation.
#include "gshare/policy/predictor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <vector>

namespace gshare::policy {
namespace {

TEST(ExecPredictor, StartsFromThePrior) {
  FunctionSpec spec;
  spec.exec_p50 = 1000;
  spec.exec_p90 = 2000;
  ExecPredictor p(spec);
  EXPECT_NEAR(static_cast<double>(p.Quantile(0.5)), 1000, 5);
  EXPECT_NEAR(static_cast<double>(p.Quantile(0.9)), 2000, 20);
  EXPECT_GT(p.Quantile(0.99), p.Quantile(0.9));
  EXPECT_NEAR(static_cast<double>(p.Predict({0.9, 0.4})), 2800, 30);
}

TEST(ExecPredictor, AdaptsToObservedBursts) {
  FunctionSpec spec;
  spec.exec_p50 = spec.exec_p90 = 1000;
  ExecPredictor p(spec);
  for (int i = 1; i <= 10; ++i) p.Observe(i * 100);  // 100 .. 1000
  EXPECT_EQ(p.Quantile(0.9), 900);
  EXPECT_EQ(p.Quantile(0.5), 500);
  EXPECT_EQ(p.Predict({0.9, 0.5}), 1350);
}

TEST(ExecPredictor, ForgetsOldBurstsBeyondTheWindow) {
  ExecPredictor p(FunctionSpec{});
  for (int i = 0; i < ExecPredictor::kWindow; ++i) p.Observe(10'000);
  for (int i = 0; i < ExecPredictor::kWindow; ++i) p.Observe(100);
  EXPECT_EQ(p.Quantile(0.99), 100);
}

TEST(ExecPredictor, ExpectedExcessIsTheMeanOverrun) {
  FunctionSpec spec;
  spec.exec_p50 = 1000;
  spec.exec_p90 = 2000;
  ExecPredictor p(spec);
  // The prior: half the mass at p50, 40% at p90, 5% at p95 and p99; nothing beyond p99.
  EXPECT_GT(p.ExpectedExcess(500), 0.5 * 500);
  EXPECT_EQ(p.ExpectedExcess(p.Quantile(0.99)), 0.0);
  for (int i = 1; i <= 10; ++i) p.Observe(i * 100);  // 100 .. 1000
  EXPECT_DOUBLE_EQ(p.ExpectedExcess(800), (100.0 + 200.0) / 10);  // 900 and 1000 overrun
  EXPECT_DOUBLE_EQ(p.ExpectedExcess(1000), 0.0);
  EXPECT_DOUBLE_EQ(p.ExpectedExcess(0), 550.0);  // the mean
}

TEST(ArrivalPredictor, RecognisesTimers) {
  ArrivalPredictor timer, bursty;
  for (int i = 0; i < 10; ++i) timer.Observe(i * 60'000'000);
  const Time gaps[] = {0, 10, 20, 5'000'000, 5'000'010, 30'000'000, 30'000'100, 31'000'000, 90'000'000};
  for (Time t : gaps) bursty.Observe(t);
  EXPECT_TRUE(timer.Periodic());
  EXPECT_EQ(timer.NextArrival(), 10 * 60'000'000);
  EXPECT_FALSE(bursty.Periodic());
  EXPECT_GT(bursty.GapCv(), 1.0);
}

TEST(ArrivalPredictor, RunningMeanGapEqualsTheWindowsMean) {
  // MeanGap keeps an integer sum of the window's gaps with each Observe: after any sequence of
  // arrivals it must equal, to the bit, the mean of the last kWindow gaps summed afresh.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<Duration> gap(0, 50'000'000);
  std::uniform_int_distribution<int> backwards(0, 9);
  ArrivalPredictor p;
  std::deque<Duration> window;
  Time t = 1'000;
  Time last = -1;
  for (int i = 0; i < 5'000; ++i) {
    // Now and then an arrival before the last one (a gap clamped to 0) or at the same time.
    t = backwards(rng) == 0 ? std::max<Time>(0, t - gap(rng) / 100) : t + gap(rng) * (i % 3);
    p.Observe(t);
    if (last >= 0) {
      window.push_back(std::max<Duration>(0, t - last));
      if (window.size() > static_cast<size_t>(ArrivalPredictor::kWindow)) window.pop_front();
    }
    last = t;
    double sum = 0;
    for (Duration d : window) sum += static_cast<double>(d);
    const double mean = window.empty() ? 0.0 : sum / static_cast<double>(window.size());
    ASSERT_EQ(p.MeanGap(), mean) << "after " << i + 1 << " arrivals";
    ASSERT_EQ(p.gaps(), static_cast<int>(window.size()));
  }
}

TEST(LinkBandwidths, FastestIsTheLargestLinkAfterAnyObservations) {
  // The fastest link is kept in an ordered multiset as links learn: after every observation it
  // must equal the maximum over the links, and each link must learn as a lone predictor would.
  std::mt19937_64 rng(11);
  const std::vector<double> priors{24'000.0, 24'000.0, 2'200.0, 50'000.0, 24'000.0};
  LinkBandwidths links(priors);
  std::vector<BandwidthPredictor> alone(priors.begin(), priors.end());
  std::uniform_int_distribution<size_t> link(0, priors.size() - 1);
  std::uniform_int_distribution<uint64_t> bytes(0, 4'000'000'000);
  std::uniform_int_distribution<Duration> took(-5, 200'000);
  ASSERT_EQ(links.size(), priors.size());
  EXPECT_EQ(links.fastest(), 50'000.0);
  for (int i = 0; i < 5'000; ++i) {
    const size_t l = link(rng);
    const uint64_t b = bytes(rng);
    const Duration d = took(rng);  // some ignored: no bytes, or no time
    links.Observe(l, b, d);
    alone[l].Observe(b, d);
    double fastest = 0;
    for (size_t j = 0; j < alone.size(); ++j) {
      ASSERT_EQ(links[j].bytes_per_us(), alone[j].bytes_per_us());
      fastest = std::max(fastest, alone[j].bytes_per_us());
    }
    ASSERT_EQ(links.fastest(), fastest) << "after " << i + 1 << " observations";
  }
  EXPECT_EQ(LinkBandwidths().fastest(), 0.0);
}

TEST(BandwidthPredictor, MovesTowardObservedTransfers) {
  BandwidthPredictor b(1000.0);
  for (int i = 0; i < 50; ++i) b.Observe(500'000, 1000);  // 500 B/us
  EXPECT_NEAR(b.bytes_per_us(), 500.0, 1.0);
  b.Observe(0, 0);  // ignored
  EXPECT_NEAR(b.bytes_per_us(), 500.0, 1.0);
}

TEST(TransferCost, ParkedSwapMovesWeightsOnlyOnItsOwnGpu) {
  FunctionSpec f;
  f.weights_bytes = 2'000'000;
  f.context_bytes = 1'000'000;
  GpuSpec g;
  g.link_bytes_per_us = 1000.0;
  g.restore_overhead = 500;
  EXPECT_EQ(SwapInCost(f, Residency::kParked, 3, 3, g).time, 2000);
  EXPECT_EQ(SwapInCost(f, Residency::kParked, 3, 4, g).time, 3500);  // migration
  EXPECT_EQ(SwapInCost(f, Residency::kHost, kNoGpu, 0, g).bytes, 3'000'000u);
  EXPECT_EQ(DeepEvictCost(f, Residency::kResident, g).bytes, 1'000'000u);
  EXPECT_EQ(FootprintBytes(f, Residency::kParked), 1'000'000u);
}

}  // namespace
}  // namespace gshare::policy
