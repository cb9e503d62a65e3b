// Descriptive statistics of a trace (size, rates, burstiness, popularity skew, per-class CVs),
// in the terms of the Azure Functions characterisation, for gshare-workload's report and for
// checking a workload before simulating it.
//
// Thread-safety: reentrant; plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gshare/workload/trace.h"

namespace gshare::workload {

struct KindSummary {
  ArrivalKind kind = ArrivalKind::kUnknown;
  uint32_t functions = 0;
  uint64_t invocations = 0;
  // Median inter-arrival CV over this kind's functions with at least 10 invocations
  // (0 when there are none), and how many such functions there were.
  double median_gap_cv = 0;
  uint32_t cv_functions = 0;
};

struct TraceSummary {
  uint64_t requests = 0;
  uint32_t functions = 0;
  uint32_t active_functions = 0;   // with at least one invocation
  double span_s = 0;               // first to last arrival
  double requests_per_s = 0;       // requests / span
  double aggregate_gap_cv = 0;     // CV of the gaps between consecutive arrivals of any function
  // Share of all invocations carried by the busiest 18.6% of functions (Azure 2019: 99.6%).
  double top_18_6_percent_share = 0;
  // Fractions of all functions whose rate over the span is at most 1/hour and 1/minute
  // (Azure 2019: 45% and 81%). Meaningful only for spans of hours or more.
  double at_most_hourly = 0;
  double at_most_minutely = 0;
  std::vector<KindSummary> kinds;  // only kinds present, in ArrivalKind order
  // Means over the invocations that have them; -1 when none has.
  double mean_input_tokens = -1;
  double mean_output_tokens = -1;
  double mean_exec_ms = -1;
};

TraceSummary Summarize(const Trace& trace);

// A few human-readable lines.
std::string FormatSummary(const TraceSummary& summary);

}  // namespace gshare::workload
