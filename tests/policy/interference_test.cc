// The contention model (interference.h) and the interference predictor: its prior is the
// analytic model exactly; it learns from recorded co-run bursts whose true slowdown differs
// from the prior (the error drops), and its uncertainty follows its error.
#include "gshare/policy/interference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gshare::policy {
namespace {

// The model's equations written out again, independently of interference.cc.
double Analytic(const std::vector<Corunner>& set, size_t i) {
  double a = 0;
  for (const Corunner& c : set) a += std::min(c.compute, c.share);
  auto rho = [&](const Corunner& c) { return std::min(c.compute, c.share) / std::max(1.0, a) / c.compute; };
  double u = 0;
  for (const Corunner& c : set) u += c.bandwidth * rho(c);
  return std::max(1.0, u) / rho(set[i]);
}

TEST(ContentionModel, KnownValues) {
  // Two functions that fill the GPU: each at half speed, no better than time slicing.
  std::vector<Corunner> full{{1, 1, 1}, {1, 1, 1}};
  EXPECT_DOUBLE_EQ(ContentionSlowdown(full, 0), 2.0);
  // Alone at full share: no slowdown.
  std::vector<Corunner> alone{{1, 0.3, 0.4}};
  EXPECT_DOUBLE_EQ(ContentionSlowdown(alone, 0), 1.0);
  // Small CNNs: nothing is oversubscribed.
  std::vector<Corunner> cnns{{0.25, 0.2, 0.2}, {0.25, 0.2, 0.2}, {0.25, 0.2, 0.2}};
  EXPECT_DOUBLE_EQ(ContentionSlowdown(cnns, 1), 1.0);
  // Two LLM decodes (bandwidth-bound): compute fits, bandwidth 1.7x oversubscribed.
  std::vector<Corunner> llms{{0.5, 0.3, 0.85}, {0.5, 0.3, 0.85}};
  EXPECT_NEAR(ContentionSlowdown(llms, 0), 1.7, 1e-12);
  // Compute and bandwidth both oversubscribed: traffic counts at the compute rates.
  std::vector<Corunner> both{{1, 0.8, 0.9}, {1, 0.8, 0.9}};  // rho = 0.625, U = 1.125
  EXPECT_NEAR(ContentionSlowdown(both, 1), 1.125 / 0.625, 1e-12);
  // A share below the demand caps the function even alone.
  std::vector<Corunner> capped{{0.25, 0.5, 0.0}};
  EXPECT_DOUBLE_EQ(ContentionSlowdown(capped, 0), 2.0);
  EXPECT_DOUBLE_EQ(ContentionRate(capped, 0), 0.5);
}

TEST(InterferencePredictor, PriorIsTheAnalyticModel) {
  InterferencePredictor p;
  for (double d : {0.1, 0.4, 0.9}) {
    for (double b : {0.0, 0.5, 1.0}) {
      for (int n = 1; n <= 4; ++n) {
        CorunQuery q{{0.5, d, b}, std::vector<Corunner>(static_cast<size_t>(n), Corunner{0.75, 0.6, 0.3})};
        std::vector<Corunner> set{q.self};
        set.insert(set.end(), q.others.begin(), q.others.end());
        EXPECT_DOUBLE_EQ(q.Prior(), Analytic(set, 0));
        EXPECT_DOUBLE_EQ(p.Predict(q).mean, std::max(1.0, Analytic(set, 0)));
        EXPECT_NEAR(p.Predict(q).stddev, p.Predict(q).mean * InterferencePredictor::kPriorLogSd, 1e-12);
      }
    }
  }
}

// A deterministic query generator (a small LCG: the test needs no randomness library).
struct Gen {
  uint64_t x = 12345;
  double U() {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(x >> 11) / 9007199254740992.0;
  }
  CorunQuery Query() {
    CorunQuery q;
    q.self = {0.25 + 0.75 * U(), 0.05 + 0.6 * U(), U()};
    const int n = 1 + static_cast<int>(U() * 3);
    for (int i = 0; i < n; ++i) q.others.push_back({0.25 + 0.75 * U(), 0.05 + 0.6 * U(), U()});
    return q;
  }
};

// The "true" slowdown of the recorded bursts: the prior misses a cache/bandwidth cliff that
// grows with the co-runners' bandwidth (published predictors' error: up to ~2x).
double Truth(const CorunQuery& q) {
  double others_bw = 0;
  for (const Corunner& c : q.others) others_bw += c.bandwidth;
  return q.Prior() * (1.0 + 0.35 * others_bw * q.self.bandwidth + 0.1);
}

double MeanLogError(const InterferencePredictor& p, const std::vector<CorunQuery>& test) {
  double sum = 0;
  for (const CorunQuery& q : test) sum += std::abs(std::log(p.Predict(q).mean / Truth(q)));
  return sum / static_cast<double>(test.size());
}

TEST(InterferencePredictor, LearnsFromRecordedBursts) {
  Gen gen;
  std::vector<CorunQuery> test;
  for (int i = 0; i < 200; ++i) test.push_back(gen.Query());
  InterferencePredictor p;
  const double before = MeanLogError(p, test);
  for (size_t i = 0; i < 4 * InterferencePredictor::kWindow; ++i) {
    const CorunQuery q = gen.Query();
    p.Observe(q, Truth(q));
  }
  EXPECT_GT(p.refits(), 0u);
  const double after = MeanLogError(p, test);
  EXPECT_GT(before, 0.15);          // the prior is off by a lot on this set
  EXPECT_LT(after, 0.4 * before);   // learning removes most of it
  EXPECT_LT(p.log_sd(), InterferencePredictor::kPriorLogSd);  // and knows it is better now
}

TEST(InterferencePredictor, UncertaintyGrowsWhenObservationsSurprise) {
  Gen gen;
  InterferencePredictor p;
  for (int i = 0; i < 10; ++i) {  // fewer than a refit: the prior stays, its error shows
    const CorunQuery q = gen.Query();
    p.Observe(q, 2.5 * q.Prior());
  }
  EXPECT_EQ(p.refits(), 0u);
  EXPECT_GT(p.log_sd(), 2 * InterferencePredictor::kPriorLogSd);
  const CorunQuery q = gen.Query();
  EXPECT_DOUBLE_EQ(p.Predict(q).mean, std::max(1.0, q.Prior()));
}

TEST(InterferencePredictor, NeverPredictsFasterThanAlone) {
  Gen gen;
  InterferencePredictor p;
  for (int i = 0; i < 100; ++i) {
    const CorunQuery q = gen.Query();
    p.Observe(q, 0.5);  // learned as they are (noise around a typical burst); predictions stay >= 1
  }
  for (int i = 0; i < 50; ++i) EXPECT_GE(p.Predict(gen.Query()).mean, 1.0);
}

// Approximately standard normal (the sum of 12 uniforms, less 6).
double Normal(Gen& gen) {
  double sum = 0;
  for (int i = 0; i < 12; ++i) sum += gen.U();
  return sum - 6.0;
}

// Callers measure a co-run burst against a typical solo burst, so each ratio is the slowdown
// times the burst's own size noise (an LLM's bursts: cv 0.5). Half of such ratios of a set
// that slows nobody lie below 1; read as 1, they taught a slowdown of 1.10 here (and in
// gshare-sim a small CNN beside an LLM, truly 1.0, was predicted 1.02-1.16, so the pair was
// rarely packed). Learned as they are, the noise averages out (1.019 here).
TEST(InterferencePredictor, NoisyRatiosOfASetThatSlowsNoneTeachNoSlowdown) {
  Gen gen;
  InterferencePredictor p;
  const CorunQuery small{{0.25, 0.1, 0.05}, {{0.5, 0.3, 0.85}}};  // a small CNN beside an LLM
  const CorunQuery llms{{0.5, 0.3, 0.85}, {{0.5, 0.3, 0.85}}};    // two LLMs: 1.7x each
  ASSERT_DOUBLE_EQ(small.Prior(), 1.0);
  ASSERT_NEAR(llms.Prior(), 1.7, 1e-12);
  for (size_t i = 0; i < 4 * InterferencePredictor::kWindow; ++i) {
    const CorunQuery& q = i % 2 == 0 ? small : llms;
    p.Observe(q, q.Prior() * std::exp(0.25 * Normal(gen)));
  }
  EXPECT_GT(p.refits(), 0u);
  EXPECT_LE(p.Predict(small).mean, 1.05) << p.Predict(small).mean;
  EXPECT_NEAR(std::log(p.Predict(llms).mean / 1.7), 0.0, 0.05) << p.Predict(llms).mean;
}

// SlowsNone trusts neither the model nor the learned correction alone.
TEST(SlowsNone, NeedsTheModelAndThePredictionBothWithinTheLimit) {
  const std::vector<Corunner> harmless{{0.25, 0.1, 0.05}, {0.5, 0.3, 0.85}};  // U = 0.9: 1.0
  const std::vector<Corunner> slowing{{0.25, 0.25, 0.2}, {0.5, 0.3, 0.85}};  // U = 1.05: 1.05
  InterferencePredictor untrained;
  EXPECT_TRUE(SlowsNone(untrained, harmless, 1.02));
  EXPECT_FALSE(SlowsNone(untrained, slowing, 1.02));
  // A predictor that learned the slowing set runs at 1.0: the model still says 1.05.
  InterferencePredictor optimistic;
  const CorunQuery q0{slowing[0], {slowing[1]}};
  const CorunQuery q1{slowing[1], {slowing[0]}};
  for (size_t i = 0; i < 2 * InterferencePredictor::kWindow; ++i) optimistic.Observe(i % 2 ? q0 : q1, 1.0);
  ASSERT_LE(optimistic.Predict(q0).mean, 1.02);
  ASSERT_LE(optimistic.Predict(q1).mean, 1.02);
  EXPECT_FALSE(SlowsNone(optimistic, slowing, 1.02));
  // A predictor that learned the harmless set slows its CNN 1.1x: not harmless either.
  InterferencePredictor pessimistic;
  const CorunQuery h0{harmless[0], {harmless[1]}};
  for (size_t i = 0; i < 2 * InterferencePredictor::kWindow; ++i) pessimistic.Observe(h0, 1.1);
  ASSERT_GT(pessimistic.Predict(h0).mean, 1.02);
  EXPECT_FALSE(SlowsNone(pessimistic, harmless, 1.02));
}

}  // namespace
}  // namespace gshare::policy
