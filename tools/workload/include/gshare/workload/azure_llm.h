// Parser for the Azure LLM inference trace 2023 (AzureLLMInferenceTrace_*.csv: header
// `TIMESTAMP,ContextTokens,GeneratedTokens`, timestamps like `2023-11-16 18:15:46.6805900`).
// The trace has no notion of functions: each request is given one of `functions` functions
// drawn from a seeded Zipf popularity, so one real arrival process drives many tenants.
//
// Thread-safety: the functions are reentrant; they read only their arguments and the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "gshare/workload/result.h"
#include "gshare/workload/trace.h"

namespace gshare::workload {

struct AzureLlmOptions {
  ParseOptions parse;
  // Number of functions the requests are spread over (>= 1), named "<prefix>-0000", ...
  uint32_t functions = 1;
  std::string function_prefix = "llm";
  // Zipf exponent s: function of popularity rank k (1-based) gets a share proportional to
  // 1 / k^s; 0 gives a uniform spread. Which function index has which rank is also seeded.
  double zipf_s = 1.0;
  uint64_t seed = 1;
};

// Reads `path`. Arrivals are rebased to the first row's timestamp (arrival 0), then divided by
// options.parse.time_compression. Rows must be in non-decreasing time order (the published
// trace is); an earlier timestamp than the previous row's is an error naming the line, as is
// any malformed row, unless options.parse.skip_malformed. Token counts go to input_tokens
// (ContextTokens) and output_tokens (GeneratedTokens).
Result<Trace> ParseAzureLlmTrace(const std::filesystem::path& path,
                                 const AzureLlmOptions& options = {});

// The same, on text already in memory; `source_name` replaces the file name in messages.
Result<Trace> ParseAzureLlmTraceText(std::string_view text, std::string_view source_name,
                                     const AzureLlmOptions& options = {});

}  // namespace gshare::workload
