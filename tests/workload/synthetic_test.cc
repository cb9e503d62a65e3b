// Tests of GenerateSynthetic: determinism, option checks, and the workload's statistics for
// fixed seeds (popularity, class mix, inter-arrival CV, daily cycle) against the reference
// characterisation of Azure Functions 2019 (docs/workloads.md).
#include "gshare/workload/synthetic.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace gshare::workload {
namespace {

SyntheticTrace Generate(const SyntheticOptions& options) {
  Result<SyntheticTrace> result = GenerateSynthetic(options);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.status().message());
  return result.ok() ? std::move(result).value() : SyntheticTrace{};
}

TEST(Synthetic, SameSeedSameTraceOtherSeedOtherTrace) {
  SyntheticOptions options;
  options.functions = 50;
  options.duration_us = 600'000'000;
  options.seed = 42;
  const SyntheticTrace a = Generate(options);
  const SyntheticTrace b = Generate(options);
  options.seed = 43;
  const SyntheticTrace c = Generate(options);
  ASSERT_GT(a.trace.invocations.size(), 1000u);
  ASSERT_EQ(a.trace.invocations.size(), b.trace.invocations.size());
  for (size_t i = 0; i < a.trace.invocations.size(); ++i) {
    ASSERT_EQ(a.trace.invocations[i].arrival_us, b.trace.invocations[i].arrival_us) << i;
    ASSERT_EQ(a.trace.invocations[i].function, b.trace.invocations[i].function) << i;
  }
  EXPECT_NE(a.trace.invocations.size(), c.trace.invocations.size());
}

TEST(Synthetic, SortedWithinDurationAndLimited) {
  SyntheticOptions options;
  options.functions = 100;
  options.duration_us = 300'000'000;
  const SyntheticTrace t = Generate(options);
  const auto& inv = t.trace.invocations;
  ASSERT_FALSE(inv.empty());
  for (size_t i = 1; i < inv.size(); ++i) ASSERT_LE(inv[i - 1].arrival_us, inv[i].arrival_us);
  EXPECT_GE(inv.front().arrival_us, 0);
  EXPECT_LT(inv.back().arrival_us, options.duration_us);
  for (const Invocation& i : inv) ASSERT_LT(i.function, 100u);

  options.max_requests = 1000;
  const SyntheticTrace limited = Generate(options);
  ASSERT_EQ(limited.trace.invocations.size(), 1000u);
  for (size_t i = 0; i < 1000; ++i) {  // a prefix of the unlimited trace
    EXPECT_EQ(limited.trace.invocations[i].arrival_us, inv[i].arrival_us);
  }
}

TEST(Synthetic, InvalidOptionsAreErrors) {
  SyntheticOptions options;
  options.functions = 0;
  EXPECT_FALSE(GenerateSynthetic(options).ok());
  options = {};
  options.timer_fraction = 0.7;
  options.bursty_fraction = 0.5;
  EXPECT_FALSE(GenerateSynthetic(options).ok());
  options = {};
  options.bursty_cv_min = 0.5;
  EXPECT_FALSE(GenerateSynthetic(options).ok());
  options = {};
  options.daily_trough_ratio = 0;
  EXPECT_FALSE(GenerateSynthetic(options).ok());
}

// Drawn parameters reproduce the characterisation's points and class mix.
TEST(Synthetic, PopularityAndClassMixOfDrawnFunctions) {
  SyntheticOptions options;
  options.functions = 5000;
  options.duration_us = 1;  // parameters only
  options.seed = 5;
  const SyntheticTrace t = Generate(options);
  ASSERT_EQ(t.parameters.size(), 5000u);
  double hourly = 0, minutely = 0, timers = 0, bursty = 0;
  std::vector<double> rates;
  for (const SyntheticFunction& f : t.parameters) {
    hourly += f.rate_per_min <= 1.0 / 60;
    minutely += f.rate_per_min <= 1.0;
    timers += f.kind == ArrivalKind::kTimer;
    bursty += f.kind == ArrivalKind::kBursty;
    rates.push_back(f.rate_per_min);
    if (f.kind == ArrivalKind::kBursty) {
      EXPECT_GE(f.gap_cv, options.bursty_cv_min);
      EXPECT_LE(f.gap_cv, options.bursty_cv_max);
    }
  }
  const double n = 5000;
  EXPECT_NEAR(hourly / n, 0.45, 0.03);    // 45% invoked at most once an hour
  EXPECT_NEAR(minutely / n, 0.81, 0.03);  // 81% at most once a minute
  EXPECT_NEAR(timers / n, 0.16, 0.02);
  EXPECT_NEAR(bursty / n, 0.40, 0.03);
  std::sort(rates.rbegin(), rates.rend());
  double top = 0, all = 0;
  for (size_t i = 0; i < rates.size(); ++i) {
    all += rates[i];
    if (i < static_cast<size_t>(0.186 * n)) top += rates[i];
  }
  EXPECT_GT(top / all, 0.99);  // the top 18.6% carry ~99.6%
}

// Realised arrivals with the default parameters: invocation counts are as skewed as the
// drawn rates.
TEST(Synthetic, RealisedPopularitySkew) {
  SyntheticOptions options;
  options.functions = 200;
  options.duration_us = 3'600'000'000;
  options.seed = 9;
  const SyntheticTrace t = Generate(options);
  std::vector<double> counts;
  for (const FunctionStats& s : ComputeFunctionStats(t.trace)) {
    counts.push_back(static_cast<double>(s.invocations));
  }
  std::sort(counts.rbegin(), counts.rend());
  double top = 0, all = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    all += counts[i];
    if (i < 37) top += counts[i];  // 18.6% of 200
  }
  EXPECT_GT(all, 10000);
  EXPECT_GT(top / all, 0.97);
}

// Inter-arrival CV per class. Busier functions than the default (log10 rate ~ N(1.5, 0.3))
// so that every function has enough gaps for a stable estimate.
TEST(Synthetic, InterArrivalCvPerClass) {
  SyntheticOptions options;
  options.functions = 60;
  options.duration_us = 3'600'000'000;
  options.log10_rate_mean = 1.5;
  options.log10_rate_sd = 0.3;
  options.seed = 9;
  const SyntheticTrace t = Generate(options);
  const std::vector<FunctionStats> stats = ComputeFunctionStats(t.trace);
  std::vector<double> poisson_cv, bursty_ratio;
  int checked_timers = 0;
  for (size_t f = 0; f < stats.size(); ++f) {
    const SyntheticFunction& p = t.parameters[f];
    if (p.kind == ArrivalKind::kTimer) {
      if (stats[f].invocations < 20) continue;
      EXPECT_LT(stats[f].gap_cv, 0.1) << f;
      EXPECT_NEAR(stats[f].mean_gap_us, static_cast<double>(p.period_us), 0.01 * p.period_us) << f;
      ++checked_timers;
    } else if (stats[f].invocations >= 1000) {
      if (p.kind == ArrivalKind::kPoisson) {
        poisson_cv.push_back(stats[f].gap_cv);
      } else {
        bursty_ratio.push_back(stats[f].gap_cv / p.gap_cv);
      }
    }
  }
  ASSERT_GE(poisson_cv.size(), 5u);
  ASSERT_GE(bursty_ratio.size(), 5u);
  EXPECT_GE(checked_timers, 3);
  for (double cv : poisson_cv) EXPECT_NEAR(cv, 1.0, 0.12);
  std::sort(bursty_ratio.begin(), bursty_ratio.end());
  EXPECT_NEAR(bursty_ratio[bursty_ratio.size() / 2], 1.0, 0.2);  // median measured / target
  for (double r : bursty_ratio) EXPECT_GT(r, 0.6);
}

// Daily cycle: trough / peak = 0.5, peak where asked. A one-hour "day" keeps the test fast.
TEST(Synthetic, DailyCycleTroughIsHalfThePeak) {
  SyntheticOptions options;
  options.functions = 20;
  options.duration_us = 3'600'000'000;
  options.day_us = 3'600'000'000;
  options.daily_peak_us = 1'800'000'000;
  options.timer_fraction = 0;
  options.bursty_fraction = 0;
  options.log10_rate_mean = 2.5;  // ~300 per minute each: plenty of samples
  options.log10_rate_sd = 0.2;
  options.seed = 3;
  const SyntheticTrace t = Generate(options);
  constexpr int kBuckets = 12;
  double bucket[kBuckets] = {};
  for (const Invocation& inv : t.trace.invocations) {
    bucket[inv.arrival_us * kBuckets / options.duration_us] += 1;
  }
  // Buckets 5 and 6 straddle the peak at 30 min; 0 and 11 the trough at 0/60 min.
  const double peak = (bucket[5] + bucket[6]) / 2, trough = (bucket[0] + bucket[11]) / 2;
  EXPECT_NEAR(trough / peak, 0.5, 0.05);
  // Disabled cycle: flat.
  options.daily_trough_ratio = 1.0;
  const SyntheticTrace flat = Generate(options);
  double flat_bucket[kBuckets] = {};
  for (const Invocation& inv : flat.trace.invocations) {
    flat_bucket[inv.arrival_us * kBuckets / options.duration_us] += 1;
  }
  EXPECT_NEAR(flat_bucket[0] / flat_bucket[6], 1.0, 0.05);
}

}  // namespace
}  // namespace gshare::workload
