// One entry point that turns "which workload" (a format name, a file, a seed: what a command
// line says) into a Trace, so gshare-sim, gshare-loadgen and gshare-workload accept the same
// inputs the same way.
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "gshare/workload/result.h"
#include "gshare/workload/synthetic.h"
#include "gshare/workload/trace.h"

namespace gshare::workload {

struct SourceOptions {
  // "synthetic", "azure-llm", "azure-functions" or "csv".
  std::string format = "synthetic";
  // The trace file. May be empty for azure-llm (then the shipped Azure LLM 2023 trace is
  // used) and is ignored for synthetic; required otherwise.
  std::filesystem::path path;
  // synthetic: number of functions; azure-llm: functions the requests are spread over (0 is
  // taken as 1); azure-functions: keep at most this many, the most invoked (0: all); csv: unused.
  uint32_t functions = 100;
  uint64_t seed = 1;
  // skip_malformed, time_compression, max_requests (synthetic honours max_requests and
  // time_compression too).
  ParseOptions parse;
  // The generator's other parameters (functions, seed and max_requests above take precedence).
  SyntheticOptions synthetic;
};

// The accepted format names, for help texts: "synthetic, azure-llm, azure-functions, csv".
std::string_view SourceFormats();

// Loads or generates the workload. Errors: unknown format, missing file, parse errors.
Result<Trace> LoadTrace(const SourceOptions& options);

}  // namespace gshare::workload
