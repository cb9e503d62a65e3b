// Implementation of text.h.
#include "text.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>

namespace gshare::workload::internal {
namespace {

constexpr size_t kMaxSkippedExamples = 5;

}  // namespace

Result<std::string> ReadWholeFile(const std::filesystem::path& path) {
  UniqueFile file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    const int err = errno;
    return Status::FromErrno(path.string() + ": cannot open", err);
  }
  std::string data;
  char buffer[1 << 16];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    data.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) {
    const int err = errno;
    return Status::FromErrno(path.string() + ": read error", err);
  }
  return data;
}

bool LineReader::Next(std::string_view* line) {
  if (rest_.empty()) return false;
  const size_t end = rest_.find('\n');
  std::string_view current = rest_.substr(0, end);
  rest_ = end == std::string_view::npos ? std::string_view() : rest_.substr(end + 1);
  if (!current.empty() && current.back() == '\r') current.remove_suffix(1);
  ++line_number_;
  *line = current;
  return true;
}

void SplitFields(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      fields->push_back(line.substr(start));
      return;
    }
    fields->push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

bool ParseDouble(std::string_view field, double* value) {
  if (field.empty()) return false;
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), *value);
  return ec == std::errc() && ptr == field.data() + field.size() && std::isfinite(*value);
}

bool ParseInt64(std::string_view field, int64_t* value) {
  if (field.empty()) return false;
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), *value);
  return ec == std::errc() && ptr == field.data() + field.size();
}

std::string Quote(std::string_view text) {
  constexpr size_t kMax = 40;
  if (text.size() <= kMax) return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, kMax)) + "...'";
}

std::string RowErrors::At(uint64_t line, std::string_view message) const {
  return std::string(source_) + ":" + std::to_string(line) + ": " + std::string(message);
}

Status RowErrors::Malformed(uint64_t line, std::string_view message) {
  if (!skip_) return FailMalformed(At(line, message));
  ++trace_->skipped_rows;
  if (trace_->skipped_examples.size() < kMaxSkippedExamples) {
    trace_->skipped_examples.push_back(At(line, message));
  }
  return Status::Ok();
}

Status ValidateParseOptions(const ParseOptions& options) {
  if (!(options.time_compression > 0) || !std::isfinite(options.time_compression)) {
    return Fail("time_compression must be a positive number, not " +
                std::to_string(options.time_compression));
  }
  return Status::Ok();
}

void FinishTrace(const ParseOptions& options, Trace* trace) {
  auto& inv = trace->invocations;
  const auto by_arrival = [](const Invocation& a, const Invocation& b) {
    return a.arrival_us < b.arrival_us;
  };
  if (!std::is_sorted(inv.begin(), inv.end(), by_arrival)) {
    std::stable_sort(inv.begin(), inv.end(), by_arrival);
  }
  if (options.max_requests != 0 && inv.size() > options.max_requests) {
    inv.resize(options.max_requests);
  }
  if (options.time_compression != 1.0) {
    for (Invocation& i : inv) {
      i.arrival_us = std::llround(static_cast<double>(i.arrival_us) / options.time_compression);
    }
  }
}

}  // namespace gshare::workload::internal
