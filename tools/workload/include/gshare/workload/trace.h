// The in-memory form of a workload: functions and their invocations (request arrivals), as
// every parser and the synthetic generator produce it and as gshare-sim and gshare-loadgen
// consume it. Plain data; see docs/workloads.md for the file formats that fill it.
//
// Thread-safety: plain values; concurrent reads are safe, writes need external locking.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gshare::workload {

// One request arrival.
struct Invocation {
  // Arrival time in microseconds since the start of the trace: azure-llm rebases so that the
  // first request arrives at 0, azure-functions counts from the start of the first replayed
  // minute, the generator from 0, and csv keeps the file's times. Never negative.
  int64_t arrival_us = 0;
  // Index into Trace::functions.
  uint32_t function = 0;
  // LLM traces only: prompt and generated token counts; -1 when the source has none.
  int32_t input_tokens = -1;
  int32_t output_tokens = -1;
  // GPU execution time of this request in milliseconds, when the source gives one (the csv
  // format's optional column) or SampleExecTimes() filled it in; nullopt otherwise.
  std::optional<double> exec_ms;
};

// How a function's arrivals come about, when the source says so.
enum class ArrivalKind : uint8_t {
  kUnknown,  // the source does not say (csv, azure-llm)
  kTimer,    // periodic (Azure Functions "timer" trigger, the generator's timers)
  kPoisson,  // memoryless arrivals (inter-arrival CV about 1)
  kBursty,   // inter-arrival CV well above 1
  kOther,    // an Azure Functions trigger other than timer (http, queue, event, ...)
};

const char* ArrivalKindName(ArrivalKind kind);

struct FunctionInfo {
  std::string name;       // unique within the trace
  ArrivalKind kind = ArrivalKind::kUnknown;
  std::string trigger;    // the Azure Functions trigger column verbatim; empty elsewhere
};

struct Trace {
  std::vector<FunctionInfo> functions;
  // Sorted by arrival_us (ties in an unspecified but deterministic order). Every
  // Invocation::function < functions.size().
  std::vector<Invocation> invocations;
  // One line saying where the trace came from and with which options, for reports.
  std::string description;
  // Rows skipped because they were malformed; only ever non-zero when the caller asked for
  // skipping (ParseOptions::skip_malformed). The first few messages are kept in skipped_examples.
  uint64_t skipped_rows = 0;
  std::vector<std::string> skipped_examples;

  // Time from the first to the last arrival (0 for fewer than two invocations).
  int64_t SpanUs() const;
};

// Options every file parser understands.
struct ParseOptions {
  // Skip malformed data rows instead of failing; they are counted in Trace::skipped_rows.
  // A wrong header or an unreadable file is always an error.
  bool skip_malformed = false;
  // Divide every arrival time by this factor (> 0): 60 replays an hour in a minute.
  double time_compression = 1.0;
  // Keep only the first max_requests arrivals (after sorting); 0 keeps all.
  uint64_t max_requests = 0;
};

// Per-function statistics of a trace, for tests, reports and the generator's self-checks.
struct FunctionStats {
  uint64_t invocations = 0;
  double mean_gap_us = 0;    // mean inter-arrival time; 0 with fewer than 2 invocations
  double gap_cv = 0;         // coefficient of variation of inter-arrival times; 0 if < 3 arrivals
};

// Returns one FunctionStats per function of `trace`. O(invocations + functions).
std::vector<FunctionStats> ComputeFunctionStats(const Trace& trace);

}  // namespace gshare::workload
