// What gshare-loadgen sends and when: a plan of arrivals (time, target, input variant, and for
// LLM traces the token counts), from a fixed rate or from a trace in any format gshare-sim
// reads (gshare_workload's LoadTrace), time-compressed, bounded in requests and in time.
//
// Trace functions map onto targets by name when every function name is a target name,
// otherwise function i goes to target i mod (number of targets) — e.g. the Azure LLM trace's
// requests spread over `functions` Zipf-popular functions, one per target.
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gshare/workload/result.h"
#include "gshare/workload/source.h"

namespace gshare::loadgen {

struct Arrival {
  int64_t at_us = 0;          // since the start of the run
  uint32_t target = 0;        // index into the target list
  uint32_t variant = 0;       // which of the deterministic inputs to send
  int32_t input_tokens = -1;  // from LLM traces; -1 if none
  int32_t output_tokens = -1;
};

struct Plan {
  std::vector<Arrival> arrivals;  // sorted by at_us
  std::string description;        // one line for reports
};

struct Bounds {
  uint64_t max_requests = 0;  // 0: no limit
  double max_seconds = 0;     // arrivals after this are dropped; 0: no limit
};

struct FixedRateOptions {
  double rate_per_s = 10;    // total over all targets (> 0)
  double duration_s = 10;    // (> 0)
  bool poisson = false;      // exponential gaps instead of even spacing
  uint64_t seed = 1;
  uint32_t variants = 8;     // distinct inputs per target (>= 1)
};

// Round-robin over `targets` (>= 1) at the given rate.
workload::Result<Plan> FixedRatePlan(const FixedRateOptions& o, size_t targets, const Bounds& b);

// A trace from `source` (its parse.time_compression compresses time), mapped onto the named
// targets.
workload::Result<Plan> TracePlan(const workload::SourceOptions& source,
                                 const std::vector<std::string>& target_names, uint32_t variants,
                                 const Bounds& b);

}  // namespace gshare::loadgen
