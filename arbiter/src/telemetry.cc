// Telemetry's logic: histogram buckets, the utilisation window, and the hooks the arbiter's loop
// calls where bursts start, grants are made, holds end and swaps are acknowledged.
#include "telemetry.h"

#include <spdlog/spdlog.h>

namespace gshare::arbiter {
namespace {

constexpr uint64_t kWaitCountsFromNs = 1'000'000;  // a first-grant wait above 1 ms is a "wait"

// The GPU tables reach `g`.
void Cover(Telemetry& t, GpuIndex g) {
  if (t.gpus.size() <= g.value()) t.gpus.resize(g.value() + 1);
  if (t.recent.size() <= g.value()) t.recent.resize(g.value() + 1);
}

}  // namespace

void Histogram::Observe(uint64_t ns) {
  const double s = static_cast<double>(ns) / 1e9;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (s <= kBounds[i]) {
      ++buckets_[i];
      break;
    }
  }
  ++count_;  // observations above the last bound are only in +Inf (the count)
  sum_s_ += s;
}

uint64_t Histogram::cumulative(size_t i) const {
  uint64_t n = 0;
  for (size_t k = 0; k <= i && k < buckets_.size(); ++k) n += buckets_[k];
  return n;
}

FunctionTelemetry& Telemetry::Function(const SeriesKey& key) {
  if (auto it = functions.find(key); it != functions.end()) return it->second;
  if (functions.size() >= kMaxFunctions) return functions[SeriesKey(kOtherFunction)];
  return functions[key];
}

void Telemetry::Prune(uint64_t now_ns) {
  const uint64_t from = now_ns > kHoldWindowNs ? now_ns - kHoldWindowNs : 0;
  for (auto& holds : recent)
    while (!holds.empty() && holds.front().end_ns < from) holds.pop_front();
}

void Telemetry::BurstStarted(ClientTelemetry& tel, uint64_t start_ns) {
  tel.burst_start_ns = start_ns;
  tel.waiting = true;
  tel.burst_wait_ns = 0;
}

void Telemetry::Granted(ClientTelemetry& tel, GpuIndex g, uint64_t now_ns) {
  Cover(*this, g);
  ++gpus[g].handoffs;
  if (tel.waiting && tel.burst_start_ns != 0) {
    const uint64_t wait = now_ns > tel.burst_start_ns ? now_ns - tel.burst_start_ns : 0;
    tel.wait_ns += wait;
    tel.burst_wait_ns = wait;
    if (wait > kWaitCountsFromNs) ++tel.waits;
  }
  tel.waiting = false;
}

void Telemetry::Released(ClientTelemetry& tel, const Release& r) {
  Cover(*this, r.gpu);
  const uint64_t held = r.now_ns > r.grant_ns ? r.now_ns - r.grant_ns : 0;
  GpuTelemetry& gt = gpus[r.gpu];
  gt.held_ns += held;
  tel.held_ns += held;
  recent[r.gpu].push_back({r.client, r.series.function, r.grant_ns, r.now_ns});
  Prune(r.now_ns);
  if (!r.burst_ended) {
    ++gt.slices_expired;
    return;
  }
  if (tel.burst_start_ns == 0) return;  // a burst that started before the arbiter saw it
  const uint64_t latency =
      r.burst_end_ns > tel.burst_start_ns ? r.burst_end_ns - tel.burst_start_ns : 0;
  FunctionTelemetry& ft = Function(r.series);
  ++ft.bursts;
  ++tel.bursts;
  ft.burst.Observe(latency);
  // The token wait of each completed request, observed with it (a burst cut short by the
  // client's exit or death, or one seen twice around a re-grant, is not a request).
  ft.wait.Observe(tel.burst_wait_ns);
  tel.last_latency_ns = latency;
  if (r.slo_ms != 0) {
    if (latency <= uint64_t{r.slo_ms} * 1'000'000) {
      ++ft.slo_met;
      ++tel.slo_met;
    } else {
      ++ft.slo_missed;
      ++tel.slo_missed;
      SloMiss miss;
      miss.at_ns = r.now_ns;
      miss.client = r.client;
      miss.function = r.series.function;
      miss.gpu = r.ordinal;
      miss.latency_ns = latency;
      miss.wait_ns = tel.burst_wait_ns;
      miss.slo_ms = r.slo_ms;
      misses.push_back(miss);
      while (misses.size() > kRecentMisses) misses.pop_front();
      spdlog::debug("client {} '{}' missed its SLO: {} us > {} ms", r.client, r.series.function,
                    latency / 1000, r.slo_ms);
    }
  }
  tel.burst_start_ns = 0;
}

void Telemetry::SwapDone(ClientTelemetry& tel, GpuIndex g, SwapDirection dir, uint64_t bytes,
                         uint64_t duration_ns) {
  Cover(*this, g);
  const auto d = static_cast<size_t>(dir);
  GpuTelemetry& gt = gpus[g];
  ++gt.swaps[d];
  gt.swap_bytes[d] += bytes;
  gt.swap_time[d].Observe(duration_ns);
  if (dir == SwapDirection::kIn) {
    ++tel.swaps_in;
  } else {
    ++tel.swaps_out;
  }
  tel.swap_bytes += bytes;
}

}  // namespace gshare::arbiter
