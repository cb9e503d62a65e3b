// Fuzz target: the Azure Functions 2019 trace parser (ParseAzureFunctionsTraceText). Any text
// is parsed or rejected with a message; an accepted trace is well-formed (trace_checks.h).
// max_requests is always bounded: per-minute counts multiply into arrivals.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gshare/workload/azure_functions.h"
#include "trace_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace wl = gshare::workload;
  gshare::fuzz::FuzzInput in(data, size);
  wl::AzureFunctionsOptions options;
  options.parse = gshare::fuzz::TakeParseOptions(in);
  if (options.parse.max_requests == 0) options.parse.max_requests = 20000;
  const uint8_t b = in.Take<uint8_t>();
  options.max_functions = b & 3;
  options.selection = static_cast<wl::FunctionSelection>((b >> 2) % 3);
  options.first_minute = 1 + ((b >> 4) & 3);
  options.minutes = (b >> 6) & 3;
  const auto trace = wl::ParseAzureFunctionsTraceText(in.Rest(), "fuzz.csv", options);
  if (!trace.ok()) {
    FUZZ_CHECK(!trace.status().message().empty());
    return 0;
  }
  gshare::fuzz::CheckTrace(trace.value(), options.parse);
  if (options.max_functions != 0) FUZZ_CHECK(trace->functions.size() <= options.max_functions);
  return 0;
}
