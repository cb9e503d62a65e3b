// Fuzz target: gshare's csv trace parser (tools/workload, ParseCsvTraceText). Any text is
// parsed or rejected with a message; an accepted trace is well-formed (trace_checks.h) and
// survives a write/parse round trip with the same number of invocations and functions.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gshare/workload/csv_trace.h"
#include "trace_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace wl = gshare::workload;
  gshare::fuzz::FuzzInput in(data, size);
  const wl::ParseOptions options = gshare::fuzz::TakeParseOptions(in);
  const auto trace = wl::ParseCsvTraceText(in.Rest(), "fuzz.csv", options);
  if (!trace.ok()) {
    FUZZ_CHECK(!trace.status().message().empty());
    return 0;
  }
  gshare::fuzz::CheckTrace(trace.value(), options);
  // Functions without a comma or newline in their name round-trip (the format's REQUIRES).
  for (const auto& f : trace->functions)
    if (f.name.find_first_of(",\n\r") != std::string::npos) return 0;
  const auto again = wl::ParseCsvTraceText(wl::FormatCsvTrace(trace.value()), "again.csv");
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->invocations.size() == trace->invocations.size());
  return 0;
}
