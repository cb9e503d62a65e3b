// Per-request records of a gshare-loadgen run (its --records CSV), grouped per sample kind for
// the demo's summary and plot.
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gshare/demo/functions.h"
#include "gshare/workload/result.h"

namespace gshare::demo {

struct RequestRecord {
  std::string target;
  double scheduled_ms = 0;
  double latency_ms = 0;
  bool ok = false;
};

// Parses "target,scheduled_ms,latency_ms,outcome" (header line first).
workload::Result<std::vector<RequestRecord>> ParseRecordsCsv(const std::string& text);

struct KindStats {
  std::string kind;
  double slo_ms = 0;  // the kind's SLO (every function of a kind has the same)
  uint64_t requests = 0, ok = 0;
  double slo_attainment = 0;  // correct and within the SLO / requests
  double p50_ms = 0, p99_ms = 0;  // over correct answers (nearest rank)
};

// One entry per kind present in `functions`, in the order cnn, bert, llm.
std::vector<KindStats> StatsByKind(const std::vector<FunctionSpec>& functions,
                                   const std::vector<RequestRecord>& records);

// Latencies of correct answers, sorted ascending.
std::vector<double> SortedOkLatencies(const std::vector<RequestRecord>& records);

}  // namespace gshare::demo
