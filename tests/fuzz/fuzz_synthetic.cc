// Fuzz target: the synthetic workload generator's options (GenerateSynthetic), as a command
// line or config can set them: any values, including NaN, infinities and extreme integers, are
// either rejected with a message or produce a well-formed, deterministic trace. Only the size
// knobs are bounded (functions <= 16, duration <= 10 s, max_requests <= 5000) to keep each
// input fast.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gshare/workload/synthetic.h"
#include "trace_checks.h"

namespace {

// Each field is either left at its default or replaced by fuzzed bits (mask bit set).
template <typename T>
void Maybe(gshare::fuzz::FuzzInput& in, uint32_t mask, int bit, T* field) {
  if ((mask >> bit) & 1U) *field = in.Take<T>();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace wl = gshare::workload;
  gshare::fuzz::FuzzInput in(data, size);
  wl::SyntheticOptions o;
  o.functions = static_cast<uint32_t>(in.Below(17));  // 0 is invalid, and must be rejected
  o.duration_us = static_cast<int64_t>(in.Below(10'000'001));
  o.seed = in.Take<uint64_t>();
  o.max_requests = 1 + in.Below(5000);
  const auto mask = in.Take<uint32_t>();
  Maybe(in, mask, 0, &o.log10_rate_mean);
  Maybe(in, mask, 1, &o.log10_rate_sd);
  Maybe(in, mask, 2, &o.rate_scale);
  Maybe(in, mask, 3, &o.max_rate_per_min);
  Maybe(in, mask, 4, &o.timer_fraction);
  Maybe(in, mask, 5, &o.bursty_fraction);
  Maybe(in, mask, 6, &o.bursty_cv_min);
  Maybe(in, mask, 7, &o.bursty_cv_max);
  Maybe(in, mask, 8, &o.timer_jitter_us);
  Maybe(in, mask, 9, &o.daily_trough_ratio);
  Maybe(in, mask, 10, &o.day_us);
  Maybe(in, mask, 11, &o.daily_peak_us);
  if ((mask >> 12) & 1U) o.log10_rate_mean = 3;  // popular functions: many arrivals
  if ((mask >> 13) & 1U) o.day_us = static_cast<int64_t>(in.Below(1'000'000)) + 1;

  const auto trace = wl::GenerateSynthetic(o);
  if (!trace.ok()) {
    FUZZ_CHECK(!trace.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(o.functions >= 1);
  FUZZ_CHECK(trace->trace.functions.size() == o.functions);
  FUZZ_CHECK(trace->parameters.size() == o.functions);
  wl::ParseOptions po;
  po.max_requests = o.max_requests;
  gshare::fuzz::CheckTrace(trace->trace, po);
  for (const auto& inv : trace->trace.invocations) FUZZ_CHECK(inv.arrival_us < o.duration_us);
  // Deterministic: the same options give the same trace.
  const auto again = wl::GenerateSynthetic(o);
  FUZZ_CHECK(again.ok() && again->trace.invocations.size() == trace->trace.invocations.size());
  return 0;
}
