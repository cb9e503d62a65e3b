// Properties every parsed workload::Trace must have (trace.h), checked by the trace parsers'
// fuzz targets, and the ParseOptions a fuzz input selects. Header-only.
#pragma once

#include <cmath>

#include "fuzz_input.h"
#include "gshare/workload/trace.h"

namespace gshare::fuzz {

// Options from one byte: skip_malformed, a time compression (1, 60, 0.5) and max_requests
// (0 = all, or 1000). Traces stay small because fuzz inputs do, except where a row's counts
// multiply (azure-functions): there the caller also bounds max_requests.
inline workload::ParseOptions TakeParseOptions(FuzzInput& in) {
  const uint8_t b = in.Take<uint8_t>();
  workload::ParseOptions o;
  o.skip_malformed = (b & 1) != 0;
  static constexpr double kCompression[] = {1.0, 60.0, 0.5, 1.0};
  o.time_compression = kCompression[(b >> 1) & 3];
  o.max_requests = (b & 8) != 0 ? 1000 : 0;
  return o;
}

inline void CheckTrace(const workload::Trace& t, const workload::ParseOptions& o) {
  if (o.max_requests != 0) FUZZ_CHECK(t.invocations.size() <= o.max_requests);
  if (!o.skip_malformed) FUZZ_CHECK(t.skipped_rows == 0);
  int64_t previous = 0;
  for (const auto& inv : t.invocations) {
    FUZZ_CHECK(inv.function < t.functions.size());
    FUZZ_CHECK(inv.arrival_us >= 0);
    FUZZ_CHECK(inv.arrival_us >= previous);  // sorted
    previous = inv.arrival_us;
    if (inv.exec_ms) FUZZ_CHECK(std::isfinite(*inv.exec_ms) && *inv.exec_ms > 0);
  }
  FUZZ_CHECK(t.SpanUs() >= 0);
  (void)workload::ComputeFunctionStats(t);
}

}  // namespace gshare::fuzz
