// Implementation of azure_functions.h: per-minute invocation counts to arrivals.
#include "gshare/workload/azure_functions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <unordered_map>

#include "discrete.h"
#include "text.h"

namespace gshare::workload {
namespace {

constexpr std::string_view kFixedColumns[] = {"HashOwner", "HashApp", "HashFunction", "Trigger"};
constexpr size_t kFirstMinuteColumn = 4;
constexpr int64_t kMinuteUs = 60'000'000;

struct FunctionRow {
  FunctionInfo info;
  uint64_t total = 0;  // invocations inside the replayed window
};

// One non-zero count inside the window.
struct MinuteCount {
  uint32_t row;
  uint32_t minute;  // offset from the window's first minute
  uint32_t count;
};

// Checks the header; on success stores the number of minute columns.
Status CheckHeader(std::string_view line, const internal::RowErrors& errors, size_t* minutes) {
  std::vector<std::string_view> fields;
  internal::SplitFields(line, &fields);
  std::string expected = "HashOwner,HashApp,HashFunction,Trigger,1,2,...";
  if (fields.size() <= kFirstMinuteColumn) {
    return FailMalformed(
        errors.At(1, "header " + internal::Quote(line) + " is not '" + expected + "'"));
  }
  for (size_t i = 0; i < kFirstMinuteColumn; ++i) {
    if (fields[i] != kFixedColumns[i]) {
      return FailMalformed(errors.At(1, "header column " + std::to_string(i + 1) + " is " +
                                            internal::Quote(fields[i]) + ", expected '" +
                                            std::string(kFixedColumns[i]) + "'"));
    }
  }
  for (size_t i = kFirstMinuteColumn; i < fields.size(); ++i) {
    const std::string want = std::to_string(i - kFirstMinuteColumn + 1);
    if (fields[i] != want) {
      return FailMalformed(errors.At(1, "header column " + std::to_string(i + 1) + " is " +
                                            internal::Quote(fields[i]) + ", expected minute " +
                                            want));
    }
  }
  *minutes = fields.size() - kFirstMinuteColumn;
  return Status::Ok();
}

// Picks which rows to keep, returned in file order.
std::vector<uint32_t> SelectFunctions(const std::vector<FunctionRow>& rows,
                                      const AzureFunctionsOptions& options) {
  std::vector<uint32_t> candidates;
  for (uint32_t r = 0; r < rows.size(); ++r) {
    if (rows[r].total > 0) candidates.push_back(r);
  }
  const size_t limit = options.max_functions;
  if (limit == 0 || candidates.size() <= limit) return candidates;
  switch (options.selection) {
    case FunctionSelection::kMostInvoked:
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](uint32_t a, uint32_t b) { return rows[a].total > rows[b].total; });
      break;
    case FunctionSelection::kRandom: {
      internal::Rng rng(options.seed, 0);
      internal::Shuffle(&candidates, &rng);
      break;
    }
    case FunctionSelection::kFirst:
      break;
  }
  candidates.resize(limit);
  std::sort(candidates.begin(), candidates.end());
  return candidates;
}

// The last window minute (offset) that must be generated to have max_requests arrivals.
uint32_t CutoffMinute(const std::vector<MinuteCount>& counts, const std::vector<int32_t>& kept,
                      uint32_t window, uint64_t max_requests) {
  if (max_requests == 0) return window;
  std::vector<uint64_t> per_minute(window, 0);
  for (const MinuteCount& c : counts) {
    if (kept[c.row] >= 0) per_minute[c.minute] += c.count;
  }
  uint64_t cumulative = 0;
  for (uint32_t m = 0; m < window; ++m) {
    cumulative += per_minute[m];
    if (cumulative >= max_requests) return m + 1;
  }
  return window;
}

}  // namespace

Result<Trace> ParseAzureFunctionsTraceText(std::string_view text, std::string_view source_name,
                                           const AzureFunctionsOptions& options) {
  if (Status bad = internal::ValidateParseOptions(options.parse); !bad.ok()) return bad;
  Trace trace;
  internal::RowErrors errors(source_name, options.parse.skip_malformed, &trace);
  internal::LineReader lines(text);
  std::string_view line;
  if (!lines.Next(&line)) {
    return FailMalformed(
        std::string(source_name) +
        ": empty file: expected the header 'HashOwner,HashApp,HashFunction,Trigger,1,...'");
  }
  size_t file_minutes = 0;
  if (Status bad = CheckHeader(line, errors, &file_minutes); !bad.ok()) return bad;
  if (options.first_minute < 1 || options.first_minute > file_minutes) {
    return Fail(std::string(source_name) + ": first_minute " +
                std::to_string(options.first_minute) + " is outside the file's minutes 1.." +
                std::to_string(file_minutes));
  }
  const size_t available = file_minutes - options.first_minute + 1;
  if (options.minutes > available) {
    return Fail(std::string(source_name) + ": minutes " + std::to_string(options.minutes) +
                " from minute " + std::to_string(options.first_minute) +
                " runs past the file's last minute " + std::to_string(file_minutes));
  }
  const uint32_t window = static_cast<uint32_t>(options.minutes == 0 ? available : options.minutes);
  const size_t begin_col = kFirstMinuteColumn + options.first_minute - 1;
  const size_t end_col = begin_col + window;

  std::vector<FunctionRow> rows;
  std::vector<MinuteCount> counts;
  std::unordered_map<std::string_view, uint32_t> seen_names;
  std::vector<std::string_view> fields;
  const size_t columns = kFirstMinuteColumn + file_minutes;
  while (lines.Next(&line)) {
    if (line.empty()) continue;
    internal::SplitFields(line, &fields);
    std::string problem;
    if (fields.size() != columns) {
      problem = "expected " + std::to_string(columns) + " fields, found " +
                std::to_string(fields.size());
    } else if (fields[2].empty()) {
      problem = "empty HashFunction";
    }
    const size_t counts_before = counts.size();
    uint64_t total = 0;
    const auto row = static_cast<uint32_t>(rows.size());
    for (size_t col = kFirstMinuteColumn; problem.empty() && col < columns; ++col) {
      int64_t n = 0;
      if (!internal::ParseInt64(fields[col], &n) || n < 0 || n > UINT32_MAX) {
        problem = "minute " + std::to_string(col - kFirstMinuteColumn + 1) + ": count " +
                  internal::Quote(fields[col]) + " is not a non-negative integer";
      } else if (n > 0 && col >= begin_col && col < end_col) {
        counts.push_back({row, static_cast<uint32_t>(col - begin_col), static_cast<uint32_t>(n)});
        total += static_cast<uint64_t>(n);
      }
    }
    if (!problem.empty()) {
      counts.resize(counts_before);
      if (Status error = errors.Malformed(lines.line_number(), problem); !error.ok()) return error;
      continue;
    }
    FunctionRow function;
    const uint32_t repeat = ++seen_names[fields[2]];
    function.info.name = std::string(fields[2]);
    if (repeat > 1) function.info.name += "#" + std::to_string(repeat);
    function.info.trigger = std::string(fields[3]);
    function.info.kind = fields[3] == "timer" ? ArrivalKind::kTimer : ArrivalKind::kOther;
    function.total = total;
    rows.push_back(std::move(function));
  }

  const std::vector<uint32_t> selected = SelectFunctions(rows, options);
  std::vector<int32_t> index_of_row(rows.size(), -1);
  for (uint32_t i = 0; i < selected.size(); ++i) {
    index_of_row[selected[i]] = static_cast<int32_t>(i);
    trace.functions.push_back(std::move(rows[selected[i]].info));
  }
  const uint32_t cutoff = CutoffMinute(counts, index_of_row, window, options.parse.max_requests);

  // Arrivals: counts are in row order, then minute order, so each function's stream of random
  // numbers is consumed in the same order whatever the cutoff or selection.
  std::vector<double> timer_phase(rows.size(), 0.0);
  uint32_t current_row = UINT32_MAX;
  internal::Rng rng(options.seed, 1);
  for (const MinuteCount& c : counts) {
    const int32_t f = index_of_row[c.row];
    if (f < 0 || c.minute >= cutoff) continue;
    if (c.row != current_row) {
      current_row = c.row;
      rng = internal::Rng(options.seed, uint64_t{c.row} + 1);
      timer_phase[c.row] = rng.Uniform();
    }
    const bool timer = trace.functions[static_cast<uint32_t>(f)].kind == ArrivalKind::kTimer;
    const int64_t start = int64_t{c.minute} * kMinuteUs;
    // A count above max_requests (only possible in the cutoff minute) generates just its
    // earliest max_requests arrivals, so the limit bounds time and memory whatever the counts
    // (a 4e9 count once ran for minutes: found by tests/fuzz/fuzz_azure_functions). Timers'
    // positions increase with j; random ones are then drawn as successive order statistics.
    const uint64_t limit = options.parse.max_requests;
    const bool earliest_only = limit != 0 && c.count > limit;
    const uint32_t n = earliest_only ? static_cast<uint32_t>(limit) : c.count;
    double order_stat = 0;
    for (uint32_t j = 0; j < n; ++j) {
      double position = 0;
      if (timer) {
        position = (j + timer_phase[c.row]) / c.count;
      } else if (earliest_only) {  // the (j+1)-th smallest of c.count uniforms
        order_stat += (1 - order_stat) * (1 - std::pow(rng.UniformPositive(), 1.0 / (c.count - j)));
        position = order_stat;
      } else {
        position = rng.Uniform();
      }
      Invocation inv;
      inv.arrival_us = start + static_cast<int64_t>(position * kMinuteUs);
      inv.function = static_cast<uint32_t>(f);
      trace.invocations.push_back(inv);
    }
  }
  internal::FinishTrace(options.parse, &trace);
  char summary[200];
  std::snprintf(summary, sizeof summary,
                ": %zu requests, %zu of %zu functions, minutes %u..%u (seed %llu, time "
                "compression %.3g)",
                trace.invocations.size(), trace.functions.size(), rows.size(),
                options.first_minute, options.first_minute + window - 1,
                static_cast<unsigned long long>(options.seed), options.parse.time_compression);
  trace.description = "azure-functions trace " + std::string(source_name) + summary;
  return trace;
}

Result<Trace> ParseAzureFunctionsTrace(const std::filesystem::path& path,
                                       const AzureFunctionsOptions& options) {
  Result<std::string> text = internal::ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseAzureFunctionsTraceText(*text, path.string(), options);
}

}  // namespace gshare::workload
