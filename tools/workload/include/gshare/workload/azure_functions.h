// Parser for the Azure Functions 2019 trace's per-minute invocation counts
// (invocations_per_function_md.anon.dNN.csv: header `HashOwner,HashApp,HashFunction,Trigger,1,
// 2,...,1440`, one row per function, one column of invocation counts per minute of the day).
// Each minute's count becomes that many arrivals spread uniformly at random (seeded) within the
// minute; timer-triggered functions get evenly spaced arrivals within the minute instead.
//
// Thread-safety: the functions are reentrant; they read only their arguments and the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "gshare/workload/result.h"
#include "gshare/workload/trace.h"

namespace gshare::workload {

enum class FunctionSelection : uint8_t {
  kMostInvoked,  // the max_functions functions with the most invocations (ties: file order)
  kRandom,       // a seeded uniform sample of max_functions functions
  kFirst,        // the first max_functions rows of the file
};

struct AzureFunctionsOptions {
  ParseOptions parse;
  // Keep at most this many functions (0: all), chosen by `selection`. Functions with no
  // invocation in the kept minutes are dropped either way.
  uint32_t max_functions = 0;
  FunctionSelection selection = FunctionSelection::kMostInvoked;
  // Replay only minutes [first_minute, first_minute + minutes) of the file (1-based minute
  // numbers as in the header; minutes = 0 means through the last column).
  uint32_t first_minute = 1;
  uint32_t minutes = 0;
  uint64_t seed = 1;
};

// Reads `path`. The header must start with exactly HashOwner,HashApp,HashFunction,Trigger and
// continue with the minute numbers 1, 2, ... in order (at least one). Every row must have as
// many fields as the header and non-negative integer counts. Function names are HashFunction,
// made unique with "#2", "#3", ... if the file repeats one. Trigger "timer" gives
// ArrivalKind::kTimer, anything else kOther. Arrival 0 is the start of first_minute.
// options.parse.max_requests keeps the earliest arrivals and stops generating past them, so a
// limit bounds memory even on a day-long file.
Result<Trace> ParseAzureFunctionsTrace(const std::filesystem::path& path,
                                       const AzureFunctionsOptions& options = {});

// The same, on text already in memory; `source_name` replaces the file name in messages.
Result<Trace> ParseAzureFunctionsTraceText(std::string_view text, std::string_view source_name,
                                           const AzureFunctionsOptions& options = {});

}  // namespace gshare::workload
