// `gshare-trace summary`: per-function figures read back from a trace JSON written by
// gshare-trace (it relies on the args of its events, see chrome_json.h): bursts, latency, token
// waits (p50/p99/total), swap counts, time and bytes, preemptions, and SLO misses by cause
// (queueing, swap, execution; see timeline.h for how the cause is decided).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gshare/shm/status.h"

namespace gshare::trace {

struct FunctionSummary {
  std::string name;
  std::vector<int64_t> clients;  // client ids (a function may have several processes)
  uint32_t slo_ms = 0;           // the largest seen
  uint64_t bursts = 0;           // finished bursts
  uint64_t unfinished = 0;       // bursts still running at the end of the trace
  std::vector<double> latency_us;
  std::vector<double> wait_us;   // every token wait (a burst may wait more than once)
  double hold_us = 0;            // total time holding a GPU token
  uint64_t swap_ins = 0, swap_outs = 0;
  double swap_in_us = 0, swap_out_us = 0;
  uint64_t swap_in_bytes = 0, swap_out_bytes = 0;
  uint64_t preemptions = 0;
  uint64_t revokes = 0;      // the token taken by enforcement (the holder ignored a preemption)
  uint64_t checkpoints = 0;  // checkpointed (enforcement or deep eviction) / restored
  uint64_t restores = 0;
  uint64_t misses = 0;
  std::map<std::string, uint64_t> miss_causes;  // "queueing" / "swap" / "execution"
};

struct TraceSummary {
  double span_us = 0;
  uint64_t records = 0;
  uint64_t lost = 0;
  std::vector<FunctionSummary> functions;  // by name
};

// Errors: not a gshare-trace trace (kMalformed).
shm::Result<TraceSummary> Summarize(const nlohmann::json& trace);

// Nearest-rank percentile (p in [0, 100]) of `v`; 0 for an empty vector.
double Percentile(std::vector<double> v, double p);

// A fixed-width table, one row per function, then the misses by cause.
std::string FormatSummary(const TraceSummary& summary);
nlohmann::json SummaryJson(const TraceSummary& summary);

}  // namespace gshare::trace
