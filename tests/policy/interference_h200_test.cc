// The interference predictor on slowdowns recorded on a real GPU, not generated: pairs of two
// synthetic kernels co-running under NVIDIA MPS on an H200 at 25/50/75/100% shares, measured by
// tests/gpu/mps-check.sh on 2026-12-04 (docs/demo.md, "MPS check on the H200"; the project's own
// measurement). The analytic prior misses them (copy beside fma slows 3.95x where it says 2x;
// two fma kernels at 50% do not slow each other where it says 2x); the predictor learns from
// the 100/50/25% records (that much it does) and is judged on the 75% ones it never saw (there
// it does not improve on the prior: a finding, bounded below, not a target met).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "gshare/policy/interference.h"

namespace gshare::policy {
namespace {

// The probe's kernels as the model sees them: both fill every SM they may use; fma uses
// (almost) no memory bandwidth, copy all of it.
constexpr Corunner kFma{1.0, 1.0, 0.0};
constexpr Corunner kCopy{1.0, 1.0, 1.0};

struct Record {
  Corunner self;
  Corunner other;
  double share;     // both members' MPS share
  double slowdown;  // self's time beside other at that share / self's time alone at 100%
};

// docs/demo.md: fma+fma 1.97 / 1.51 / 1.01 / 1.01, copy+copy 1.94 / 1.93 / 1.92 / 2.05, fma
// beside copy 1.09 / 1.22 / 1.04 / 1.01, copy beside fma 3.95 / 2.21 / 1.77 / 1.37 at 100 / 75 /
// 50 / 25%.
std::vector<Record> H200Pairs() {
  const double shares[] = {1.0, 0.75, 0.5, 0.25};
  const double fma_fma[] = {1.97, 1.51, 1.01, 1.01};
  const double copy_copy[] = {1.94, 1.93, 1.92, 2.05};
  const double fma_by_copy[] = {1.09, 1.22, 1.04, 1.01};
  const double copy_by_fma[] = {3.95, 2.21, 1.77, 1.37};
  std::vector<Record> r;
  for (int i = 0; i < 4; ++i) {
    r.push_back({kFma, kFma, shares[i], fma_fma[i]});
    r.push_back({kCopy, kCopy, shares[i], copy_copy[i]});
    r.push_back({kFma, kCopy, shares[i], fma_by_copy[i]});
    r.push_back({kCopy, kFma, shares[i], copy_by_fma[i]});
  }
  return r;
}

CorunQuery QueryOf(const Record& r) {
  CorunQuery q;
  q.self = r.self;
  q.self.share = r.share;
  Corunner other = r.other;
  other.share = r.share;
  q.others = {other};
  return q;
}

double MeanLogError(const InterferencePredictor& p, const std::vector<Record>& set) {
  double sum = 0;
  for (const Record& r : set) sum += std::abs(std::log(p.Predict(QueryOf(r)).mean / r.slowdown));
  return sum / static_cast<double>(set.size());
}

TEST(InterferencePredictor, LearnsTheH200PairsAndPredictsTheShareItNeverSaw) {
  std::vector<Record> train, held_out;
  for (const Record& r : H200Pairs()) (r.share == 0.75 ? held_out : train).push_back(r);
  InterferencePredictor p;
  const double train_before = MeanLogError(p, train);
  const double held_before = MeanLogError(p, held_out);
  // Each recorded pair seen as several bursts would be (the arbiter observes every co-run
  // burst): 6 passes over the 12 records, 72 observations, 3 refits.
  for (int pass = 0; pass < 6; ++pass)
    for (const Record& r : train) p.Observe(QueryOf(r), r.slowdown);
  EXPECT_GE(p.refits(), 3u);
  const double train_after = MeanLogError(p, train);
  const double held_after = MeanLogError(p, held_out);
  std::printf("mean |log error|: seen %.3f -> %.3f, held-out 75%% %.3f -> %.3f\n", train_before,
              train_after, held_before, held_after);
  EXPECT_GT(train_before, 0.2);  // the prior misses the GPU by a lot
  EXPECT_LT(train_after, 0.5 * train_before);  // the recorded pairs are learned
  // What it learned does not carry to the share it never saw: measured 0.228 -> 0.263 (worse;
  // docs/scheduling.md, "The predictor on the H200's pairs"). Bounded here so that it cannot
  // get much worse unnoticed; making it better is open (issue 20).
  EXPECT_LT(held_after, held_before + 0.1);
}

}  // namespace
}  // namespace gshare::policy
