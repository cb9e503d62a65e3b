// Tests of ParseAzureFunctionsTrace: per-minute counts to arrivals.
#include "gshare/workload/azure_functions.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "test_util.h"

namespace gshare::workload {
namespace {

using testing::TempDir;

constexpr int64_t kMinuteUs = 60'000'000;

// A four-minute file: an http function, a timer, a function never invoked, a busy queue one.
constexpr const char* kFile =
    "HashOwner,HashApp,HashFunction,Trigger,1,2,3,4\n"
    "o1,a1,f-http,http,2,0,1,0\n"
    "o1,a1,f-timer,timer,1,1,1,1\n"
    "o2,a2,f-idle,http,0,0,0,0\n"
    "o2,a3,f-queue,queue,10,20,0,5\n";

std::map<std::string, int> CountsByName(const Trace& trace) {
  std::map<std::string, int> counts;
  for (const Invocation& inv : trace.invocations) ++counts[trace.functions[inv.function].name];
  return counts;
}

TEST(AzureFunctions, CountsBecomeArrivalsInsideTheirMinute) {
  TempDir dir;
  Result<Trace> trace = ParseAzureFunctionsTrace(dir.Write("af.csv", kFile));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->functions.size(), 3u);  // f-idle dropped
  EXPECT_EQ(trace->functions[0].name, "f-http");
  EXPECT_EQ(trace->functions[1].kind, ArrivalKind::kTimer);
  EXPECT_EQ(trace->functions[2].trigger, "queue");
  EXPECT_EQ(trace->functions[2].kind, ArrivalKind::kOther);
  const auto counts = CountsByName(*trace);
  EXPECT_EQ(counts.at("f-http"), 3);
  EXPECT_EQ(counts.at("f-timer"), 4);
  EXPECT_EQ(counts.at("f-queue"), 35);
  // Each arrival lies within its minute: the queue function has none in minute 3.
  int queue_in_minute[4] = {0, 0, 0, 0};
  for (const Invocation& inv : trace->invocations) {
    ASSERT_GE(inv.arrival_us, 0);
    ASSERT_LT(inv.arrival_us, 4 * kMinuteUs);
    if (trace->functions[inv.function].name == "f-queue") ++queue_in_minute[inv.arrival_us / kMinuteUs];
  }
  EXPECT_EQ(queue_in_minute[0], 10);
  EXPECT_EQ(queue_in_minute[1], 20);
  EXPECT_EQ(queue_in_minute[2], 0);
  EXPECT_EQ(queue_in_minute[3], 5);
  EXPECT_TRUE(std::is_sorted(trace->invocations.begin(), trace->invocations.end(),
                             [](const Invocation& a, const Invocation& b) {
                               return a.arrival_us < b.arrival_us;
                             }));
}

TEST(AzureFunctions, TimerFiresEveryMinuteAtTheSamePhase) {
  Result<Trace> trace = ParseAzureFunctionsTraceText(kFile, "af");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::vector<int64_t> times;
  for (const Invocation& inv : trace->invocations) {
    if (inv.function == 1) times.push_back(inv.arrival_us);
  }
  ASSERT_EQ(times.size(), 4u);
  for (size_t i = 1; i < times.size(); ++i) EXPECT_NEAR(times[i] - times[i - 1], kMinuteUs, 1);
}

TEST(AzureFunctions, SeededAndDeterministic) {
  AzureFunctionsOptions options;
  options.seed = 11;
  Result<Trace> a = ParseAzureFunctionsTraceText(kFile, "af", options);
  Result<Trace> b = ParseAzureFunctionsTraceText(kFile, "af", options);
  options.seed = 12;
  Result<Trace> c = ParseAzureFunctionsTraceText(kFile, "af", options);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_EQ(a->invocations.size(), b->invocations.size());
  bool differs = false;
  for (size_t i = 0; i < a->invocations.size(); ++i) {
    EXPECT_EQ(a->invocations[i].arrival_us, b->invocations[i].arrival_us);
    differs |= a->invocations[i].arrival_us != c->invocations[i].arrival_us;
  }
  EXPECT_TRUE(differs);
}

TEST(AzureFunctions, SelectionWindowAndLimits) {
  AzureFunctionsOptions options;
  options.max_functions = 1;
  Result<Trace> top = ParseAzureFunctionsTraceText(kFile, "af", options);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->functions.size(), 1u);
  EXPECT_EQ(top->functions[0].name, "f-queue");

  options.selection = FunctionSelection::kFirst;
  Result<Trace> first = ParseAzureFunctionsTraceText(kFile, "af", options);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->functions[0].name, "f-http");

  options = {};
  options.first_minute = 2;
  options.minutes = 2;
  Result<Trace> window = ParseAzureFunctionsTraceText(kFile, "af", options);
  ASSERT_TRUE(window.ok()) << window.status().message();
  const auto counts = CountsByName(*window);
  EXPECT_EQ(counts.at("f-http"), 1);
  EXPECT_EQ(counts.at("f-timer"), 2);
  EXPECT_EQ(counts.at("f-queue"), 20);
  for (const Invocation& inv : window->invocations) EXPECT_LT(inv.arrival_us, 2 * kMinuteUs);

  options.minutes = 4;  // past the last column
  EXPECT_FALSE(ParseAzureFunctionsTraceText(kFile, "af", options).ok());

  options = {};
  options.parse.max_requests = 15;
  Result<Trace> limited = ParseAzureFunctionsTraceText(kFile, "af", options);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->invocations.size(), 15u);
}

TEST(AzureFunctions, DuplicateNamesAreMadeUnique) {
  Result<Trace> trace = ParseAzureFunctionsTraceText(
      "HashOwner,HashApp,HashFunction,Trigger,1\no,a,f,http,1\no,b,f,http,1\n", "af");
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ(trace->functions.size(), 2u);
  EXPECT_EQ(trace->functions[0].name, "f");
  EXPECT_EQ(trace->functions[1].name, "f#2");
}

TEST(AzureFunctions, MalformedRowsNameTheLine) {
  const std::string header = "HashOwner,HashApp,HashFunction,Trigger,1,2\n";
  const char* bad_rows[] = {"o,a,f,http,1\n", "o,a,f,http,1,2,3\n", "o,a,f,http,1,x\n",
                            "o,a,f,http,-1,0\n", "o,a,,http,1,0\n"};
  for (const char* row : bad_rows) {
    Result<Trace> trace =
        ParseAzureFunctionsTraceText(header + "o,a,g,http,0,1\n" + row, "af.csv");
    ASSERT_FALSE(trace.ok()) << row;
    EXPECT_NE(trace.status().message().find("af.csv:3:"), std::string::npos)
        << row << " -> " << trace.status().message();
  }
  AzureFunctionsOptions options;
  options.parse.skip_malformed = true;
  Result<Trace> skipped =
      ParseAzureFunctionsTraceText(header + "o,a,g,http,0,1\no,a,f,http,1,x\n", "af", options);
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(skipped->skipped_rows, 1u);
  EXPECT_EQ(skipped->invocations.size(), 1u);
}

TEST(AzureFunctions, EmptyFileAndWrongHeaders) {
  EXPECT_FALSE(ParseAzureFunctionsTraceText("", "af").ok());
  const char* headers[] = {"HashOwner,HashApp,HashFunction,Trigger\n",
                           "HashOwner,HashApp,HashFunction,Trig,1\n",
                           "HashOwner,HashApp,HashFunction,Trigger,1,3\n",
                           "TIMESTAMP,ContextTokens,GeneratedTokens\n"};
  for (const char* header : headers) {
    Result<Trace> trace = ParseAzureFunctionsTraceText(header, "af");
    ASSERT_FALSE(trace.ok()) << header;
    EXPECT_NE(trace.status().message().find("af:1:"), std::string::npos) << trace.status().message();
  }
}

}  // namespace
}  // namespace gshare::workload
