// Tests of ParseCsvTrace: the timestamp_ms,function[,exec_ms] format.
#include "gshare/workload/csv_trace.h"

#include <gtest/gtest.h>

#include "gshare/workload/synthetic.h"

#include "test_util.h"

namespace gshare::workload {
namespace {

using testing::TempDir;

TEST(CsvTrace, ParsesRowsAndNumbersFunctionsByFirstAppearance) {
  TempDir dir;
  const auto file = dir.Write("t.csv",
                              "timestamp_ms,function\n"
                              "0,resize\n"
                              "1.5,classify\n"
                              "# a comment\n"
                              "\n"
                              "2000,resize\r\n");
  Result<Trace> trace = ParseCsvTrace(file);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->functions.size(), 2u);
  EXPECT_EQ(trace->functions[0].name, "resize");
  EXPECT_EQ(trace->functions[1].name, "classify");
  ASSERT_EQ(trace->invocations.size(), 3u);
  EXPECT_EQ(trace->invocations[0].arrival_us, 0);
  EXPECT_EQ(trace->invocations[1].arrival_us, 1500);
  EXPECT_EQ(trace->invocations[1].function, 1u);
  EXPECT_EQ(trace->invocations[2].arrival_us, 2'000'000);
  EXPECT_FALSE(trace->invocations[0].exec_ms.has_value());
  EXPECT_EQ(trace->skipped_rows, 0u);
  EXPECT_EQ(trace->SpanUs(), 2'000'000);
}

TEST(CsvTrace, OptionalExecColumnAndSorting) {
  Result<Trace> trace = ParseCsvTraceText(
      "timestamp_ms,function,exec_ms\n"
      "30,a,2.5\n"
      "10,b,\n"
      "20,a,7\n",
      "mem");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->invocations.size(), 3u);
  EXPECT_EQ(trace->invocations[0].arrival_us, 10'000);
  EXPECT_FALSE(trace->invocations[0].exec_ms.has_value());
  EXPECT_EQ(trace->invocations[1].arrival_us, 20'000);
  EXPECT_DOUBLE_EQ(trace->invocations[1].exec_ms.value_or(0), 7.0);
  EXPECT_DOUBLE_EQ(trace->invocations[2].exec_ms.value_or(0), 2.5);
}

TEST(CsvTrace, MalformedRowNamesFileAndLine) {
  TempDir dir;
  const auto file = dir.Write("bad.csv", "timestamp_ms,function\n1,a\n2,b\nx3,c\n4,d\n");
  Result<Trace> trace = ParseCsvTrace(file);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find(file.string() + ":4:"), std::string::npos)
      << trace.status().message();
  EXPECT_NE(trace.status().message().find("x3"), std::string::npos) << trace.status().message();
}

TEST(CsvTrace, EachKindOfMalformedRowIsAnError) {
  const char* bad_rows[] = {"1,a,3\n", "-1,a\n", "1,\n", "1\n", "nan,a\n"};
  for (const char* row : bad_rows) {
    Result<Trace> trace = ParseCsvTraceText(std::string("timestamp_ms,function\n") + row, "m");
    EXPECT_FALSE(trace.ok()) << row;
    if (!trace.ok()) {
      EXPECT_NE(trace.status().message().find("m:2:"), std::string::npos) << row;
    }
  }
  Result<Trace> bad_exec = ParseCsvTraceText("timestamp_ms,function,exec_ms\n1,a,0\n", "m");
  EXPECT_FALSE(bad_exec.ok());
}

TEST(CsvTrace, SkipMalformedCountsAndReports) {
  ParseOptions options;
  options.skip_malformed = true;
  Result<Trace> trace =
      ParseCsvTraceText("timestamp_ms,function\n1,a\nbad\n2,b\n3,c,extra\n", "m", options);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->invocations.size(), 2u);
  EXPECT_EQ(trace->skipped_rows, 2u);
  ASSERT_EQ(trace->skipped_examples.size(), 2u);
  EXPECT_NE(trace->skipped_examples[0].find("m:3:"), std::string::npos);
  EXPECT_NE(trace->skipped_examples[1].find("m:5:"), std::string::npos);
}

TEST(CsvTrace, EmptyFileAndWrongHeaderAreErrors) {
  TempDir dir;
  Result<Trace> empty = ParseCsvTrace(dir.Write("empty.csv", ""));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty file"), std::string::npos) << empty.status().message();

  Result<Trace> wrong = ParseCsvTraceText("time,fn\n1,a\n", "w.csv");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("w.csv:1: header"), std::string::npos)
      << wrong.status().message();

  Result<Trace> header_only = ParseCsvTraceText("timestamp_ms,function\n", "h");
  ASSERT_TRUE(header_only.ok());
  EXPECT_TRUE(header_only->invocations.empty());
}

TEST(CsvTrace, MissingFileIsAnError) {
  Result<Trace> trace = ParseCsvTrace("/nonexistent/gshare/trace.csv");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("cannot open"), std::string::npos);
}

TEST(CsvTrace, MaxRequestsAndTimeCompression) {
  ParseOptions options;
  options.max_requests = 2;
  options.time_compression = 10;
  Result<Trace> trace =
      ParseCsvTraceText("timestamp_ms,function\n100,a\n300,a\n200,b\n", "m", options);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->invocations.size(), 2u);
  EXPECT_EQ(trace->invocations[0].arrival_us, 10'000);
  EXPECT_EQ(trace->invocations[1].arrival_us, 20'000);

  options.time_compression = 0;
  EXPECT_FALSE(ParseCsvTraceText("timestamp_ms,function\n", "m", options).ok());
}

TEST(CsvTrace, WriteThenParseRoundTrips) {
  SyntheticOptions options;
  options.functions = 30;
  options.duration_us = 600'000'000;
  Result<SyntheticTrace> generated = GenerateSynthetic(options);
  ASSERT_TRUE(generated.ok());
  Trace& original = generated->trace;
  ASSERT_GT(original.invocations.size(), 100u);
  original.invocations[3].exec_ms = 1.0 / 3.0;  // one exec time: the column is written
  TempDir dir;
  const auto file = dir.path() / "round.csv";
  {
    const Status written = WriteCsvTrace(original, file);
    ASSERT_TRUE(written.ok()) << written.message();
  }
  Result<Trace> back = ParseCsvTrace(file);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->invocations.size(), original.invocations.size());
  for (size_t i = 0; i < original.invocations.size(); ++i) {
    const Invocation& a = original.invocations[i];
    const Invocation& b = back->invocations[i];
    ASSERT_EQ(a.arrival_us, b.arrival_us) << i;
    ASSERT_EQ(original.functions[a.function].name, back->functions[b.function].name) << i;
    ASSERT_EQ(a.exec_ms, b.exec_ms) << i;
  }
  EXPECT_EQ(FormatCsvTrace(Trace{}), "timestamp_ms,function\n");
  EXPECT_FALSE(WriteCsvTrace(original, dir.path() / "no-such-dir" / "x.csv").ok());
}

}  // namespace
}  // namespace gshare::workload
