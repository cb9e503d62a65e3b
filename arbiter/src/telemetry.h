// Telemetry: what the arbiter measures about its clients and GPUs for operators — request
// (burst) latencies and SLO attainment, token waits, swap times and bytes, hand-offs, recent
// token holds (utilisation by tenant) and recent SLO misses. Fed by the event loop
// (ArbiterImpl's On* hooks), read by the control interface (gshare-ctl, gshare-top) and
// rendered as Prometheus text (metrics_text.cc).
//
// Ownership: plain values, owned by ArbiterImpl. Thread-safety: none; the loop thread only
// (the metrics server gets a rendered copy).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu_ids.h"

namespace gshare::arbiter {

// A Prometheus-style cumulative histogram of durations in seconds.
class Histogram {
 public:
  // Upper bounds in seconds (le), ascending; +Inf is implicit.
  static constexpr std::array<double, 14> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                      0.005,  0.01,    0.025,  0.05,  0.1,
                                                      0.25,   0.5,     1.0,    2.5};
  void Observe(uint64_t ns);
  // Observations <= kBounds[i] (cumulative), i < kBounds.size(); then the total count.
  uint64_t cumulative(size_t i) const;
  uint64_t count() const { return count_; }
  double sum_seconds() const { return sum_s_; }

 private:
  std::array<uint64_t, kBounds.size()> buckets_{};  // not cumulative
  uint64_t count_ = 0;
  double sum_s_ = 0;
};

// What the per-function series are kept by: the function's name and, when the client named it
// (GSHARE_POD_NAMESPACE / GSHARE_POD_NAME), its pod. Replicas of one function outside
// Kubernetes share a series; in Kubernetes each pod has its own (metrics labels function,
// namespace, pod). Implicitly made from a bare function name.
struct SeriesKey {
  std::string function;
  std::string pod_namespace;  // "" unknown
  std::string pod;            // "" unknown
  SeriesKey() = default;
  SeriesKey(std::string f, std::string ns = {}, std::string p = {})  // NOLINT: implicit
      : function(std::move(f)), pod_namespace(std::move(ns)), pod(std::move(p)) {}
  SeriesKey(const char* f) : function(f) {}  // NOLINT: implicit
  auto operator<=>(const SeriesKey&) const = default;
  bool operator==(const SeriesKey&) const = default;
};

// Per series (above), kept after clients leave.
struct FunctionTelemetry {
  uint64_t bursts = 0;      // requests completed (BurstEnd)
  uint64_t slo_met = 0;     // completed within the SLO (functions with an SLO only)
  uint64_t slo_missed = 0;
  Histogram burst;          // burst start -> burst end
  Histogram wait;           // burst start -> first grant
};

enum class SwapDirection : uint8_t { kIn, kOut };

struct GpuTelemetry {
  uint64_t handoffs = 0;        // grants
  uint64_t slices_expired = 0;  // yields with work left (slice end / preemption honoured)
  uint64_t held_ns = 0;         // total token-held time of finished holds
  std::array<uint64_t, 2> swaps{};       // by SwapDirection
  std::array<uint64_t, 2> swap_bytes{};  // by SwapDirection
  std::array<Histogram, 2> swap_time;    // by SwapDirection
};

// Per client, in Client.
struct ClientTelemetry {
  uint64_t burst_start_ns = 0;  // current burst (0 = none)
  bool waiting = false;         // current burst not granted yet
  uint64_t burst_wait_ns = 0;   // current burst's first-grant wait
  uint64_t bursts = 0;
  uint64_t slo_met = 0;
  uint64_t slo_missed = 0;
  uint64_t waits = 0;           // bursts that had to wait for their first grant > 1 ms
  uint64_t wait_ns = 0;         // total first-grant wait
  uint64_t held_ns = 0;         // total token-held time of finished holds
  uint64_t last_latency_ns = 0;
  uint64_t swaps_in = 0;
  uint64_t swaps_out = 0;
  uint64_t swap_bytes = 0;
};

// One finished token hold, for utilisation over the last seconds.
struct Hold {
  uint32_t client = 0;
  std::string function;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct SloMiss {
  uint64_t at_ns = 0;
  uint32_t client = 0;
  std::string function;
  DeviceOrdinal gpu;  // of the last grant
  uint64_t latency_ns = 0;
  uint64_t wait_ns = 0;
  uint32_t slo_ms = 0;
};

// A token hold that ended, as Telemetry::Released counts it.
struct Release {
  uint32_t client = 0;
  SeriesKey series;  // the client's function (and pod)
  GpuIndex gpu;
  DeviceOrdinal ordinal;
  uint32_t slo_ms = 0;       // 0: none
  uint64_t grant_ns = 0;     // when the hold began
  uint64_t now_ns = 0;       // when it ended
  bool burst_ended = false;  // the burst ended (else its slice did, and it waits again)
  uint64_t burst_end_ns = 0;
};

struct Telemetry {
  static constexpr uint64_t kHoldWindowNs = 5'000'000'000;  // utilisation window
  static constexpr size_t kRecentMisses = 32;
  // Series kept (metrics cardinality: functions x pods); later ones count under kOtherFunction
  // (no pod labels).
  static constexpr size_t kMaxFunctions = 1024;
  static constexpr const char* kOtherFunction = "(other)";

  std::map<SeriesKey, FunctionTelemetry> functions;
  ByGpu<GpuTelemetry> gpus;
  ByGpu<std::deque<Hold>> recent;            // holds ending in the window
  std::deque<SloMiss> misses;                // newest last

  // The series of `key` (kOtherFunction once kMaxFunctions series exist).
  FunctionTelemetry& Function(const SeriesKey& key);
  // Drops holds that ended before now - kHoldWindowNs.
  void Prune(uint64_t now_ns);

  // The hooks the loop calls, each on the client's own counters and the node's:
  // a burst began at `start_ns` (it waits for its first grant from then);
  static void BurstStarted(ClientTelemetry& tel, uint64_t start_ns);
  // a grant on `g` (the burst's first-grant wait ends; above 1 ms it counts as a wait);
  void Granted(ClientTelemetry& tel, GpuIndex g, uint64_t now_ns);
  // a hold ended: held time, the recent holds, and for a burst that ended its latency against
  // its SLO (a miss is kept among the recent misses);
  void Released(ClientTelemetry& tel, const Release& r);
  // a swap acknowledged as done.
  void SwapDone(ClientTelemetry& tel, GpuIndex g, SwapDirection dir, uint64_t bytes,
                uint64_t duration_ns);
};

}  // namespace gshare::arbiter
