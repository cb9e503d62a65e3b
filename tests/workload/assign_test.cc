// Tests of AssignModels and SampleExecTimes.
#include "gshare/workload/assign.h"

#include <cmath>

#include <gtest/gtest.h>

namespace gshare::workload {
namespace {

Trace FunctionsOnly(size_t n) {
  Trace t;
  for (size_t i = 0; i < n; ++i) t.functions.push_back({"f" + std::to_string(i), {}, {}});
  return t;
}

TEST(AssignModels, FollowsSharesAndIsDeterministic) {
  Catalog catalog;
  catalog.source = "test";
  ModelSpec a;
  a.name = "a";
  a.share = 1;
  ModelSpec b = a;
  b.name = "b";
  b.share = 3;
  ModelSpec never = a;
  never.name = "never";
  never.share = 0;
  catalog.models = {a, b, never};
  const Trace trace = FunctionsOnly(20000);
  Result<std::vector<uint32_t>> m1 = AssignModels(trace, catalog, 5);
  Result<std::vector<uint32_t>> m2 = AssignModels(trace, catalog, 5);
  Result<std::vector<uint32_t>> m3 = AssignModels(trace, catalog, 6);
  ASSERT_TRUE(m1.ok() && m2.ok() && m3.ok());
  EXPECT_EQ(*m1, *m2);
  EXPECT_NE(*m1, *m3);
  double count_b = 0;
  for (uint32_t m : *m1) {
    ASSERT_LT(m, 2u);  // never the zero-share model
    count_b += m == 1;
  }
  EXPECT_NEAR(count_b / 20000, 0.75, 0.015);
}

TEST(AssignModels, EmptyOrZeroCatalogIsAnError) {
  Catalog catalog;
  EXPECT_FALSE(AssignModels(FunctionsOnly(3), catalog, 1).ok());
  ModelSpec m;
  m.name = "m";
  m.share = 0;
  catalog.models = {m};
  EXPECT_FALSE(AssignModels(FunctionsOnly(3), catalog, 1).ok());
}

TEST(SampleExecTimes, LogNormalTokensAndGivenTimes) {
  Catalog catalog;
  ModelSpec fixed;
  fixed.name = "fixed";
  fixed.exec_ms_mean = 4;
  ModelSpec lognormal = fixed;
  lognormal.name = "lognormal";
  lognormal.exec_ms_mean = 10;
  lognormal.exec_ms_cv = 0.5;
  ModelSpec llm = fixed;
  llm.name = "llm";
  llm.exec_ms_mean = 1000;
  llm.prefill_ms_per_token = 0.1;
  llm.decode_ms_per_token = 8;
  catalog.models = {fixed, lognormal, llm};

  Trace trace = FunctionsOnly(3);
  const int kN = 40000;
  for (int i = 0; i < kN; ++i) {
    Invocation inv;
    inv.function = 1;
    trace.invocations.push_back(inv);
  }
  Invocation given;
  given.function = 1;
  given.exec_ms = 99;
  trace.invocations.push_back(given);
  Invocation tokens;
  tokens.function = 2;
  tokens.input_tokens = 1000;
  tokens.output_tokens = 100;
  trace.invocations.push_back(tokens);
  Invocation no_tokens;
  no_tokens.function = 2;
  trace.invocations.push_back(no_tokens);
  Invocation constant;
  constant.function = 0;
  trace.invocations.push_back(constant);

  SampleExecTimes(&trace, catalog, {0, 1, 2}, 17);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < kN; ++i) {
    const double x = trace.invocations[static_cast<size_t>(i)].exec_ms.value();
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / kN;
  const double cv = std::sqrt(sum2 / kN - mean * mean) / mean;
  EXPECT_NEAR(mean, 10, 0.2);
  EXPECT_NEAR(cv, 0.5, 0.03);
  EXPECT_DOUBLE_EQ(trace.invocations[kN].exec_ms.value(), 99);              // kept
  EXPECT_DOUBLE_EQ(trace.invocations[kN + 1].exec_ms.value(), 100 + 800);   // tokens
  EXPECT_DOUBLE_EQ(trace.invocations[kN + 2].exec_ms.value(), 1000);        // cv 0: the mean
  EXPECT_DOUBLE_EQ(trace.invocations[kN + 3].exec_ms.value(), 4);
}

}  // namespace
}  // namespace gshare::workload
