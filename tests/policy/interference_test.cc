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
    p.Observe(q, 0.5);  // impossible observations are read as 1
  }
  for (int i = 0; i < 50; ++i) EXPECT_GE(p.Predict(gen.Query()).mean, 1.0);
}

}  // namespace
}  // namespace gshare::policy
