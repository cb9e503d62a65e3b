// Implementation of azure_llm.h: the Azure LLM inference trace 2023 CSV.
#include "gshare/workload/azure_llm.h"

#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "discrete.h"
#include "text.h"

namespace gshare::workload {
namespace {

constexpr std::string_view kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens";

// Days since 1970-01-01 of a proleptic Gregorian date (the classic era-based conversion).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Reads exactly `width` digits at text[pos].
bool Digits(std::string_view text, size_t pos, size_t width, int64_t* value) {
  if (pos + width > text.size()) return false;
  int64_t v = 0;
  for (size_t i = pos; i < pos + width; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *value = v;
  return true;
}

// Parses "YYYY-MM-DD HH:MM:SS[.fraction]" into microseconds since the epoch (fraction digits
// beyond microseconds are rounded).
bool ParseTimestampUs(std::string_view text, int64_t* us) {
  int64_t y, mo, d, h, mi, s;
  if (text.size() < 19 || !Digits(text, 0, 4, &y) || text[4] != '-' || !Digits(text, 5, 2, &mo) ||
      text[7] != '-' || !Digits(text, 8, 2, &d) || text[10] != ' ' || !Digits(text, 11, 2, &h) ||
      text[13] != ':' || !Digits(text, 14, 2, &mi) || text[16] != ':' ||
      !Digits(text, 17, 2, &s)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return false;
  double fraction = 0;
  if (text.size() > 19) {
    if (text[19] != '.' || text.size() == 20) return false;
    double scale = 0.1;
    for (size_t i = 20; i < text.size(); ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      fraction += (text[i] - '0') * scale;
      scale /= 10;
    }
  }
  const int64_t seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  *us = seconds * 1'000'000 + std::llround(fraction * 1e6);
  return true;
}

bool ParseTokens(std::string_view field, int32_t* value) {
  int64_t v = 0;
  if (!internal::ParseInt64(field, &v) || v < 0 || v > INT32_MAX) return false;
  *value = static_cast<int32_t>(v);
  return true;
}

std::string FunctionName(const std::string& prefix, uint32_t index) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%04u", index);
  return prefix + "-" + digits;
}

}  // namespace

Result<Trace> ParseAzureLlmTraceText(std::string_view text, std::string_view source_name,
                                     const AzureLlmOptions& options) {
  if (Status bad = internal::ValidateParseOptions(options.parse); !bad.ok()) return bad;
  if (options.functions == 0) return Fail("functions must be at least 1");
  if (!(options.zipf_s >= 0) || !std::isfinite(options.zipf_s)) {
    return Fail("zipf_s must be a non-negative number");
  }
  Trace trace;
  internal::RowErrors errors(source_name, options.parse.skip_malformed, &trace);
  internal::LineReader lines(text);
  std::string_view line;
  if (!lines.Next(&line)) {
    return FailMalformed(std::string(source_name) + ": empty file: expected the header '" +
                         std::string(kHeader) + "'");
  }
  if (line != kHeader) {
    return FailMalformed(errors.At(1, "header " + internal::Quote(line) + " is not '" +
                                          std::string(kHeader) + "'"));
  }

  // Popularity: rank k gets weight 1/k^s; a seeded permutation decides which function has
  // which rank, and each request draws its function independently.
  internal::Rng rng(options.seed);
  std::vector<uint32_t> function_of_rank(options.functions);
  std::iota(function_of_rank.begin(), function_of_rank.end(), 0u);
  internal::Shuffle(&function_of_rank, &rng);
  const internal::DiscreteSampler popularity(internal::ZipfWeights(options.functions, options.zipf_s));
  trace.functions.reserve(options.functions);
  for (uint32_t f = 0; f < options.functions; ++f) {
    trace.functions.push_back(FunctionInfo{FunctionName(options.function_prefix, f), {}, {}});
  }

  std::vector<std::string_view> fields;
  trace.invocations.reserve(text.size() / 32);
  bool have_first = false;
  int64_t first_us = 0, previous_us = 0;
  const uint64_t keep = options.parse.max_requests;
  while (lines.Next(&line)) {
    if (line.empty()) continue;
    if (keep != 0 && trace.invocations.size() >= keep) break;  // input is time-ordered
    internal::SplitFields(line, &fields);
    std::string problem;
    int64_t us = 0;
    Invocation inv;
    if (fields.size() != 3) {
      problem = "expected 3 fields, found " + std::to_string(fields.size());
    } else if (!ParseTimestampUs(fields[0], &us)) {
      problem = "TIMESTAMP " + internal::Quote(fields[0]) +
                " is not 'YYYY-MM-DD HH:MM:SS[.fraction]'";
    } else if (!ParseTokens(fields[1], &inv.input_tokens)) {
      problem = "ContextTokens " + internal::Quote(fields[1]) + " is not a non-negative integer";
    } else if (!ParseTokens(fields[2], &inv.output_tokens)) {
      problem = "GeneratedTokens " + internal::Quote(fields[2]) + " is not a non-negative integer";
    } else if (have_first && us < previous_us) {
      problem = "TIMESTAMP " + internal::Quote(fields[0]) + " is earlier than the previous row's";
    }
    if (!problem.empty()) {
      if (Status error = errors.Malformed(lines.line_number(), problem); !error.ok()) return error;
      continue;
    }
    if (!have_first) {
      first_us = us;
      have_first = true;
    }
    previous_us = us;
    inv.arrival_us = us - first_us;
    inv.function = function_of_rank[popularity.Sample(&rng)];
    trace.invocations.push_back(inv);
  }
  internal::FinishTrace(options.parse, &trace);
  char summary[160];
  std::snprintf(summary, sizeof summary,
                ": %zu requests over %u functions (Zipf s=%.2f, seed %llu, time compression %.3g)",
                trace.invocations.size(), options.functions, options.zipf_s,
                static_cast<unsigned long long>(options.seed), options.parse.time_compression);
  trace.description = "azure-llm trace " + std::string(source_name) + summary;
  return trace;
}

Result<Trace> ParseAzureLlmTrace(const std::filesystem::path& path,
                                 const AzureLlmOptions& options) {
  Result<std::string> text = internal::ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseAzureLlmTraceText(*text, path.string(), options);
}

}  // namespace gshare::workload
