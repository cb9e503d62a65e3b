// Fuzz target: the Azure LLM inference 2023 trace parser (ParseAzureLlmTraceText). Any text is
// parsed or rejected with a message; an accepted trace is well-formed (trace_checks.h), starts
// at 0 and has non-negative token counts.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gshare/workload/azure_llm.h"
#include "trace_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace wl = gshare::workload;
  gshare::fuzz::FuzzInput in(data, size);
  wl::AzureLlmOptions options;
  options.parse = gshare::fuzz::TakeParseOptions(in);
  const uint8_t b = in.Take<uint8_t>();
  options.functions = 1 + (b & 7);
  options.zipf_s = (b & 8) != 0 ? 0.0 : 1.2;
  options.seed = b >> 4;
  const auto trace = wl::ParseAzureLlmTraceText(in.Rest(), "fuzz.csv", options);
  if (!trace.ok()) {
    FUZZ_CHECK(!trace.status().message().empty());
    return 0;
  }
  gshare::fuzz::CheckTrace(trace.value(), options.parse);
  FUZZ_CHECK(trace->functions.size() <= options.functions);
  if (!trace->invocations.empty()) FUZZ_CHECK(trace->invocations.front().arrival_us == 0);
  for (const auto& inv : trace->invocations)
    FUZZ_CHECK(inv.input_tokens >= -1 && inv.output_tokens >= -1);
  return 0;
}
