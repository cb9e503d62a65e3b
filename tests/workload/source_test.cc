// Tests of LoadTrace (format dispatch) and Summarize.
#include "gshare/workload/source.h"

#include <gtest/gtest.h>

#include "gshare/workload/summary.h"
#include "test_util.h"

namespace gshare::workload {
namespace {

using testing::TempDir;

TEST(LoadTrace, DispatchesOnFormat) {
  TempDir dir;
  SourceOptions options;
  options.format = "csv";
  options.path = dir.Write("t.csv", "timestamp_ms,function\n0,a\n5,b\n");
  Result<Trace> csv = LoadTrace(options);
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_EQ(csv->invocations.size(), 2u);

  options.format = "azure-functions";
  options.path = dir.Write("f.csv", "HashOwner,HashApp,HashFunction,Trigger,1\no,a,f,http,3\n");
  Result<Trace> functions = LoadTrace(options);
  ASSERT_TRUE(functions.ok()) << functions.status().message();
  EXPECT_EQ(functions->invocations.size(), 3u);

  options.format = "azure-llm";
  options.path.clear();  // the shipped trace
  options.functions = 10;
  options.parse.max_requests = 500;
  Result<Trace> llm = LoadTrace(options);
  ASSERT_TRUE(llm.ok()) << llm.status().message();
  EXPECT_EQ(llm->invocations.size(), 500u);
  EXPECT_EQ(llm->functions.size(), 10u);

  options.format = "synthetic";
  options.functions = 20;
  options.synthetic.duration_us = 600'000'000;
  options.parse.time_compression = 10;
  Result<Trace> synthetic = LoadTrace(options);
  ASSERT_TRUE(synthetic.ok()) << synthetic.status().message();
  EXPECT_EQ(synthetic->functions.size(), 20u);
  EXPECT_LE(synthetic->invocations.size(), 500u);
  EXPECT_LT(synthetic->invocations.back().arrival_us, 60'000'000);  // 10 min / 10
}

TEST(LoadTrace, Errors) {
  SourceOptions options;
  options.format = "parquet";
  Result<Trace> unknown = LoadTrace(options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown workload format 'parquet'"), std::string::npos);
  options.format = "csv";
  EXPECT_FALSE(LoadTrace(options).ok());  // no file
  options.format = "synthetic";
  options.functions = 0;
  EXPECT_FALSE(LoadTrace(options).ok());
}

TEST(Summarize, CountsRatesSkewAndKinds) {
  Trace t;
  t.functions = {{"busy", ArrivalKind::kPoisson, {}},
                 {"timer", ArrivalKind::kTimer, {}},
                 {"idle", ArrivalKind::kPoisson, {}}};
  // "timer": every 10 s for 10 minutes; "busy": 100 requests in the first second.
  for (int i = 0; i <= 60; ++i) t.invocations.push_back({i * 10'000'000LL, 1, -1, -1, 2.0});
  for (int i = 0; i < 100; ++i) t.invocations.push_back({i * 10'000LL, 0, 10, 20, {}});
  std::stable_sort(t.invocations.begin(), t.invocations.end(),
                   [](const Invocation& a, const Invocation& b) { return a.arrival_us < b.arrival_us; });
  const TraceSummary s = Summarize(t);
  EXPECT_EQ(s.requests, 161u);
  EXPECT_EQ(s.functions, 3u);
  EXPECT_EQ(s.active_functions, 2u);
  EXPECT_DOUBLE_EQ(s.span_s, 600.0);
  EXPECT_NEAR(s.top_18_6_percent_share, 100.0 / 161.0, 1e-9);  // ceil(0.558) = 1 function
  EXPECT_NEAR(s.at_most_minutely, 1.0 / 3.0, 1e-9);            // only "idle"
  EXPECT_DOUBLE_EQ(s.mean_input_tokens, 10);
  EXPECT_DOUBLE_EQ(s.mean_output_tokens, 20);
  EXPECT_DOUBLE_EQ(s.mean_exec_ms, 2.0);
  ASSERT_EQ(s.kinds.size(), 2u);
  EXPECT_EQ(s.kinds[0].kind, ArrivalKind::kTimer);
  EXPECT_NEAR(s.kinds[0].median_gap_cv, 0.0, 1e-9);
  EXPECT_EQ(s.kinds[1].kind, ArrivalKind::kPoisson);
  EXPECT_EQ(s.kinds[1].functions, 2u);
  EXPECT_EQ(s.kinds[1].cv_functions, 1u);
  // Gaps: 0, 99 x 10 ms, 9.99 s... (sample CV of 160 gaps worked out by hand: 1.2918).
  EXPECT_NEAR(s.aggregate_gap_cv, 1.2918, 1e-3);
  const std::string text = FormatSummary(s);
  EXPECT_NE(text.find("requests 161"), std::string::npos) << text;
  EXPECT_NE(text.find("timer"), std::string::npos) << text;
}

}  // namespace
}  // namespace gshare::workload
