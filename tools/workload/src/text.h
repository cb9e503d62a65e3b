// Internal: the pieces every CSV-like parser shares: reading a file whole, walking its lines
// with line numbers, splitting fields, strict number parsing, and the malformed-row policy
// (fail with "file:line: message", or count and skip when the caller asked).
//
// Thread-safety: plain values; no shared state.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gshare/workload/result.h"
#include "gshare/workload/trace.h"

namespace gshare::workload::internal {

// An open stdio file, closed when the owner goes.
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using UniqueFile = std::unique_ptr<std::FILE, FileCloser>;

// Reads the whole file. Errors name the path and the OS reason.
Result<std::string> ReadWholeFile(const std::filesystem::path& path);

// Walks `text` line by line (LF or CRLF), numbering lines from 1. The views point into text.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : rest_(text) {}
  // Stores the next line without its terminator and returns true; false at the end.
  bool Next(std::string_view* line);
  uint64_t line_number() const { return line_number_; }

 private:
  std::string_view rest_;
  uint64_t line_number_ = 0;
};

// Splits a line at commas into `fields` (cleared first). No quoting: none of our formats
// needs it.
void SplitFields(std::string_view line, std::vector<std::string_view>* fields);

// Strict parsers: the whole field must be the number (no spaces, no trailing text).
bool ParseDouble(std::string_view field, double* value);
bool ParseInt64(std::string_view field, int64_t* value);

// "'text'" shortened to at most 40 characters, for messages.
std::string Quote(std::string_view text);

// Applies the malformed-row policy of ParseOptions::skip_malformed.
class RowErrors {
 public:
  RowErrors(std::string_view source, bool skip, Trace* trace)
      : source_(source), skip_(skip), trace_(trace) {}

  // Records that line `line` is malformed. Returns the error to fail with (kMalformed), or OK
  // when the row is to be skipped (then it is counted in trace->skipped_rows).
  Status Malformed(uint64_t line, std::string_view message);

  // "source:line: message".
  std::string At(uint64_t line, std::string_view message) const;

 private:
  std::string_view source_;
  bool skip_;
  Trace* trace_;
};

// Checks ParseOptions values; returns OK or an error naming the bad option.
Status ValidateParseOptions(const ParseOptions& options);

// Final steps shared by the parsers: stable sort by arrival (when not already sorted), keep the
// first max_requests, divide arrivals by time_compression.
void FinishTrace(const ParseOptions& options, Trace* trace);

}  // namespace gshare::workload::internal
