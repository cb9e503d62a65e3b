// The arbiter's counters (the uint64 fields of ArbiterStats) in one table: their name, a one-line
// help, whether Prometheus sees a counter or a gauge, and where each is shown. The JSON summary
// (WriteSummary), the control socket's status reply ("counters"), the Prometheus page
// (PrometheusText) and the counters table of docs/operating.md are all produced from it
// (issue 19). Adding a field to ArbiterStats means adding its row here; counters_test.cc fails
// otherwise. Static data; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "gshare/arbiter/arbiter.h"

namespace gshare::arbiter {

// Where a counter is shown (CounterInfo::shown is a mask of these).
enum CounterShown : unsigned {
  kShownInSummary = 1U << 0,  // the JSON summary written at exit (--summary)
  kShownInStatus = 1U << 1,   // {"cmd":"status"}'s "counters" object
  kShownInMetrics = 1U << 2,  // the Prometheus page
  kShownEverywhere = kShownInSummary | kShownInStatus | kShownInMetrics,
};

// Counters only grow; gauges follow the live tenants (state kept, not history).
enum class CounterType { kCounter, kGauge };

struct CounterInfo {
  const char* name;  // the summary and status key: the ArbiterStats field's name
  uint64_t ArbiterStats::*field;
  CounterType type;
  unsigned shown;    // CounterShown mask
  const char* help;  // one line: the docs and the Prometheus HELP
  // The Prometheus family without the gshare_arbiter_ prefix; null: name + "_total" for a
  // counter, name for a gauge. Rows sharing a family follow each other and tell their sample
  // apart by `metric_labels`; the first row's `metric_help` (or help) is the family's HELP.
  const char* metric = nullptr;
  const char* metric_labels = nullptr;  // e.g. cause="exited"
  const char* metric_help = nullptr;
};

// Every counter, in the order the Prometheus page lists them.
std::span<const CounterInfo> Counters();

// The Prometheus family of `c` without the prefix ("refusals_total", "tracked_uids").
std::string MetricFamily(const CounterInfo& c);

// Sets j[name] = value for every counter shown in `where` (one CounterShown bit).
void AddCountersJson(const ArbiterStats& stats, unsigned where, nlohmann::json& j);

// The Markdown table of docs/operating.md ("Counters"): one row per counter, ending in "\n".
std::string CountersMarkdown();

}  // namespace gshare::arbiter
