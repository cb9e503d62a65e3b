// The Prometheus text exposition (format 0.0.4) of the arbiter's state and telemetry: counters,
// per-GPU memory gauges, per-GPU hand-offs, slices, swaps and bytes by direction, per-function
// requests and SLO attainment, and latency histograms (burst duration and token wait by
// function, swap time by GPU and direction). Pure function of its input; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gshare/arbiter/arbiter.h"
#include "telemetry.h"

namespace gshare::arbiter {

struct GpuMetrics {
  uint32_t ordinal = 0;
  uint64_t total_bytes = 0;
  uint64_t resident_bytes = 0;  // quotas of the vGPUs resident on it
  uint64_t swapped_bytes = 0;   // quotas of the vGPUs swapped out (or checkpointed) from it
  uint32_t resident_clients = 0;
  uint32_t queued = 0;          // clients with a request waiting for this GPU
  bool holder = false;
  bool drained = false;
};

struct MetricsInput {
  ArbiterStats stats;
  size_t clients = 0;
  std::vector<GpuMetrics> gpus;          // same order as stats.gpus
  const Telemetry* telemetry = nullptr;  // may be null (no telemetry yet)
  // Per function (and pod, when named): its instances (clients) now, and how many are warm
  // (IsWarm). Bounded by the clients.
  struct Instances {
    uint32_t warm = 0;
    uint32_t total = 0;
  };
  std::map<SeriesKey, Instances> instances;
};

std::string PrometheusText(const MetricsInput& in);

// A label value escaped for the text format (backslash, double quote, newline).
std::string EscapeLabel(const std::string& value);

}  // namespace gshare::arbiter
