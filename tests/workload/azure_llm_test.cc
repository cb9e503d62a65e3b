// Tests of ParseAzureLlmTrace, on small files and on the shipped Azure LLM 2023 trace.
#include "gshare/workload/azure_llm.h"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "gshare/workload/data_dir.h"
#include "test_util.h"

namespace gshare::workload {
namespace {

using testing::TempDir;

constexpr const char* kSmall =
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:15:46.6805900,374,44\n"
    "2023-11-16 18:15:50.9951690,396,109\n"
    "2023-11-16 23:59:59.5,10,1\n"
    "2023-11-17 00:00:00,20,2\n";

TEST(AzureLlm, ParsesTimestampsAndTokens) {
  TempDir dir;
  Result<Trace> trace = ParseAzureLlmTrace(dir.Write("llm.csv", kSmall));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->invocations.size(), 4u);
  ASSERT_EQ(trace->functions.size(), 1u);
  EXPECT_EQ(trace->functions[0].name, "llm-0000");
  EXPECT_EQ(trace->invocations[0].arrival_us, 0);
  EXPECT_EQ(trace->invocations[1].arrival_us, 4'314'579);  // .9951690 - .6805900, rounded
  // Across midnight: 18:15:46.68059 -> 00:00:00 is 20653.31941 s.
  EXPECT_EQ(trace->invocations[3].arrival_us, 20'653'319'410);
  EXPECT_EQ(trace->invocations[0].input_tokens, 374);
  EXPECT_EQ(trace->invocations[0].output_tokens, 44);
  EXPECT_EQ(trace->invocations[3].output_tokens, 2);
}

TEST(AzureLlm, MalformedRowsNameTheLine) {
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  const std::string good = "2023-11-16 18:15:46.6805900,374,44\n";
  const char* bad_rows[] = {
      "2023-11-16 18:15:47,12\n",            // too few fields
      "2023-13-16 18:15:47,1,2\n",           // month 13
      "2023-11-16T18:15:47,1,2\n",           // wrong separator
      "2023-11-16 18:15:47.,1,2\n",          // empty fraction
      "2023-11-16 18:15:47,-1,2\n",          // negative tokens
      "2023-11-16 18:15:47,1,two\n",         // not a number
      "2023-11-16 18:15:40,1,2\n",           // earlier than the previous row
  };
  for (const char* row : bad_rows) {
    Result<Trace> trace = ParseAzureLlmTraceText(header + good + row + good, "llm.csv");
    ASSERT_FALSE(trace.ok()) << row;
    EXPECT_NE(trace.status().message().find("llm.csv:3:"), std::string::npos)
        << row << " -> " << trace.status().message();
  }
}

TEST(AzureLlm, SkipMalformedCounts) {
  AzureLlmOptions options;
  options.parse.skip_malformed = true;
  Result<Trace> trace = ParseAzureLlmTraceText(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46,1,2\nbroken\n2023-11-16 18:15:47,3,4\n",
      "m", options);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->invocations.size(), 2u);
  EXPECT_EQ(trace->skipped_rows, 1u);
}

TEST(AzureLlm, EmptyFileAndWrongHeader) {
  EXPECT_FALSE(ParseAzureLlmTraceText("", "e").ok());
  Result<Trace> wrong = ParseAzureLlmTraceText("TIMESTAMP,Context,Generated\n", "w");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("w:1: header"), std::string::npos);
  Result<Trace> header_only = ParseAzureLlmTraceText("TIMESTAMP,ContextTokens,GeneratedTokens\n", "h");
  ASSERT_TRUE(header_only.ok());
  EXPECT_TRUE(header_only->invocations.empty());
}

TEST(AzureLlm, OptionsAreValidated) {
  AzureLlmOptions options;
  options.functions = 0;
  EXPECT_FALSE(ParseAzureLlmTraceText(kSmall, "m", options).ok());
  options.functions = 2;
  options.zipf_s = -1;
  EXPECT_FALSE(ParseAzureLlmTraceText(kSmall, "m", options).ok());
}

// The shipped trace: its size and time span, Zipf spread, compression, limits, determinism.
class ShippedLlmTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::filesystem::path> p = ShippedAzureLlmTracePath();
    ASSERT_TRUE(p.ok()) << p.status().message();
    path_ = *p;
  }
  std::filesystem::path path_;
};

TEST_F(ShippedLlmTrace, RowCountAndTimeSpan) {
  Result<Trace> trace = ParseAzureLlmTrace(path_);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->invocations.size(), 19366u);
  EXPECT_EQ(trace->skipped_rows, 0u);
  // 18:15:46.6805900 to 19:14:08.4025270.
  EXPECT_EQ(trace->SpanUs(), 3'501'721'937);
  EXPECT_EQ(trace->invocations.back().input_tokens, 197);
  EXPECT_EQ(trace->invocations.back().output_tokens, 183);
}

TEST_F(ShippedLlmTrace, ZipfPopularityOverFunctions) {
  AzureLlmOptions options;
  options.functions = 20;
  options.zipf_s = 1.0;
  options.seed = 7;
  Result<Trace> trace = ParseAzureLlmTrace(path_, options);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->functions.size(), 20u);
  std::vector<double> counts(20, 0);
  for (const Invocation& inv : trace->invocations) counts[inv.function] += 1;
  std::sort(counts.rbegin(), counts.rend());
  // Zipf(1) over 20 ranks: shares 1/(k H_20), H_20 = 3.5977. Top rank 27.8%, rank 2 13.9%.
  const double n = static_cast<double>(trace->invocations.size());
  EXPECT_NEAR(counts[0] / n, 0.278, 0.02);
  EXPECT_NEAR(counts[1] / n, 0.139, 0.015);
  EXPECT_NEAR(counts[0] / counts[19], 20.0, 6.0);
  // Uniform spread when s = 0.
  options.zipf_s = 0;
  Result<Trace> uniform = ParseAzureLlmTrace(path_, options);
  ASSERT_TRUE(uniform.ok());
  std::vector<double> flat(20, 0);
  for (const Invocation& inv : uniform->invocations) flat[inv.function] += 1;
  for (double c : flat) EXPECT_NEAR(c / n, 0.05, 0.01);
}

TEST_F(ShippedLlmTrace, SeedDecidesAssignmentDeterministically) {
  AzureLlmOptions options;
  options.functions = 50;
  options.seed = 3;
  Result<Trace> a = ParseAzureLlmTrace(path_, options);
  Result<Trace> b = ParseAzureLlmTrace(path_, options);
  options.seed = 4;
  Result<Trace> c = ParseAzureLlmTrace(path_, options);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  size_t same_ab = 0, same_ac = 0;
  for (size_t i = 0; i < a->invocations.size(); ++i) {
    same_ab += a->invocations[i].function == b->invocations[i].function;
    same_ac += a->invocations[i].function == c->invocations[i].function;
  }
  EXPECT_EQ(same_ab, a->invocations.size());
  EXPECT_LT(same_ac, a->invocations.size() / 2);
}

TEST_F(ShippedLlmTrace, CompressionAndMaxRequests) {
  AzureLlmOptions options;
  options.parse.time_compression = 60;
  options.parse.max_requests = 1000;
  Result<Trace> trace = ParseAzureLlmTrace(path_, options);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->invocations.size(), 1000u);
  Result<Trace> full = ParseAzureLlmTrace(path_);
  ASSERT_TRUE(full.ok());
  EXPECT_NEAR(static_cast<double>(trace->invocations[999].arrival_us),
              static_cast<double>(full->invocations[999].arrival_us) / 60.0, 1.0);
}

}  // namespace
}  // namespace gshare::workload
