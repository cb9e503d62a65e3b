// Robustness of the parsers: random, mostly malformed inputs (a valid header followed by noise
// from the formats' own alphabet) must give either a trace or an error naming the source, never
// a crash; with skip_malformed every input parses. Run under ASan/UBSan to catch memory errors.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "gshare/workload/azure_functions.h"
#include "gshare/workload/azure_llm.h"
#include "gshare/workload/catalog.h"
#include "gshare/workload/csv_trace.h"

namespace gshare::workload {
namespace {

std::string Noise(std::mt19937_64* rng, size_t length) {
  static constexpr char kAlphabet[] = "0123456789,,,..--::  \n\n\r#abcdefT";
  std::string s;
  for (size_t i = 0; i < length; ++i) s += kAlphabet[(*rng)() % (sizeof kAlphabet - 1)];
  return s;
}

template <typename Parse>
void Fuzz(const std::string& header, Parse parse) {
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 300; ++i) {
    const std::string text = header + Noise(&rng, rng() % 400);
    for (bool skip : {false, true}) {
      Result<Trace> trace = parse(text, skip);
      if (skip) {
        EXPECT_TRUE(trace.ok()) << trace.status().message() << "\n" << text;
      } else if (!trace.ok()) {
        EXPECT_EQ(trace.status().message().rfind("noise:", 0), 0u) << trace.status().message();
      }
      if (trace.ok()) {
        for (const Invocation& inv : trace->invocations) {
          ASSERT_LT(inv.function, trace->functions.size());
        }
      }
    }
  }
}

TEST(Robustness, CsvTrace) {
  Fuzz("timestamp_ms,function,exec_ms\n", [](const std::string& text, bool skip) {
    ParseOptions options;
    options.skip_malformed = skip;
    return ParseCsvTraceText(text, "noise", options);
  });
}

TEST(Robustness, AzureLlm) {
  Fuzz("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,1,2\n",
       [](const std::string& text, bool skip) {
         AzureLlmOptions options;
         options.parse.skip_malformed = skip;
         options.functions = 3;
         return ParseAzureLlmTraceText(text, "noise", options);
       });
}

TEST(Robustness, AzureFunctions) {
  Fuzz("HashOwner,HashApp,HashFunction,Trigger,1,2\n", [](const std::string& text, bool skip) {
    AzureFunctionsOptions options;
    options.parse.skip_malformed = skip;
    return ParseAzureFunctionsTraceText(text, "noise", options);
  });
}

TEST(Robustness, Catalog) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 300; ++i) {
    const std::string text = "[[model]]\nname = \"m\"\n" + Noise(&rng, rng() % 200);
    Result<Catalog> catalog = ParseCatalog(text, "noise");
    if (!catalog.ok()) {
      EXPECT_EQ(catalog.status().message().rfind("noise", 0), 0u) << catalog.status().message();
    }
  }
}

}  // namespace
}  // namespace gshare::workload
