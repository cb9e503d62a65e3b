// Implementation of csv_trace.h: the `timestamp_ms,function[,exec_ms]` format.
#include "gshare/workload/csv_trace.h"

#include <cmath>
#include <string>
#include <unordered_map>

#include "text.h"

namespace gshare::workload {
namespace {

constexpr std::string_view kHeader2 = "timestamp_ms,function";
constexpr std::string_view kHeader3 = "timestamp_ms,function,exec_ms";

bool IsBlankOrComment(std::string_view line) { return line.empty() || line.front() == '#'; }

// Parses one data row into `inv` (function index resolved through `index`). Returns an error
// message, or an empty string on success.
std::string ParseRow(std::string_view line, bool has_exec, double time_compression,
                     std::vector<std::string_view>* fields,
                     std::unordered_map<std::string_view, uint32_t>* index, Trace* trace,
                     Invocation* inv) {
  internal::SplitFields(line, fields);
  const size_t expected = has_exec ? 3 : 2;
  if (fields->size() != expected) {
    return "expected " + std::to_string(expected) + " fields, found " +
           std::to_string(fields->size());
  }
  double ms = 0;
  if (!internal::ParseDouble((*fields)[0], &ms) || ms < 0) {
    return "timestamp_ms " + internal::Quote((*fields)[0]) + " is not a non-negative number";
  }
  // 10^12 ms (about 31.7 years): beyond it the microsecond count would overflow int64 once
  // multiplied (found by tests/fuzz/fuzz_csv_trace).
  if (ms > 1e12) return "timestamp_ms " + internal::Quote((*fields)[0]) + " exceeds 10^12 ms";
  // The same bound once the time is compressed (a factor below 1 stretches it): otherwise an
  // accepted trace could not be read back (found by tests/fuzz/fuzz_csv_trace).
  if (ms / time_compression > 1e12)
    return "timestamp_ms " + internal::Quote((*fields)[0]) + " exceeds 10^12 ms once divided by "
           "the time compression " + std::to_string(time_compression);
  const std::string_view name = (*fields)[1];
  if (name.empty()) return "empty function name";
  inv->arrival_us = std::llround(ms * 1000.0);
  inv->exec_ms.reset();
  if (has_exec && !(*fields)[2].empty()) {
    double exec = 0;
    if (!internal::ParseDouble((*fields)[2], &exec) || !(exec > 0)) {
      return "exec_ms " + internal::Quote((*fields)[2]) + " is not a positive number";
    }
    inv->exec_ms = exec;
  }
  auto [it, inserted] = index->try_emplace(name, static_cast<uint32_t>(trace->functions.size()));
  if (inserted) trace->functions.push_back(FunctionInfo{std::string(name), {}, {}});
  inv->function = it->second;
  return {};
}

}  // namespace

Result<Trace> ParseCsvTraceText(std::string_view text, std::string_view source_name,
                                const ParseOptions& options) {
  if (Status bad = internal::ValidateParseOptions(options); !bad.ok()) return bad;
  Trace trace;
  internal::RowErrors errors(source_name, options.skip_malformed, &trace);
  internal::LineReader lines(text);
  std::string_view line;
  bool have_header = false;
  bool has_exec = false;
  while (!have_header && lines.Next(&line)) {
    if (IsBlankOrComment(line)) continue;
    if (line != kHeader2 && line != kHeader3) {
      return FailMalformed(errors.At(lines.line_number(), "header " + internal::Quote(line) +
                                                              " is not '" + std::string(kHeader2) +
                                                              "' or '" + std::string(kHeader3) +
                                                              "'"));
    }
    have_header = true;
    has_exec = line == kHeader3;
  }
  if (!have_header) {
    return FailMalformed(std::string(source_name) + ": empty file: expected the header '" +
                         std::string(kHeader2) + "[,exec_ms]'");
  }
  std::vector<std::string_view> fields;
  std::unordered_map<std::string_view, uint32_t> index;
  trace.invocations.reserve(text.size() / 16);
  while (lines.Next(&line)) {
    if (IsBlankOrComment(line)) continue;
    Invocation inv;
    const std::string problem =
        ParseRow(line, has_exec, options.time_compression, &fields, &index, &trace, &inv);
    if (!problem.empty()) {
      if (Status error = errors.Malformed(lines.line_number(), problem); !error.ok()) return error;
      continue;
    }
    trace.invocations.push_back(inv);
  }
  internal::FinishTrace(options, &trace);
  trace.description = "csv trace " + std::string(source_name) + ": " +
                      std::to_string(trace.invocations.size()) + " requests, " +
                      std::to_string(trace.functions.size()) + " functions";
  return trace;
}

Result<Trace> ParseCsvTrace(const std::filesystem::path& path, const ParseOptions& options) {
  Result<std::string> text = internal::ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseCsvTraceText(*text, path.string(), options);
}

}  // namespace gshare::workload
