// The arbiter's telemetry hooks (called by the scheduling code where bursts start, grants are
// made, tokens released and swaps acknowledged) and the Prometheus text of /metrics.
#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "metrics_text.h"

namespace gshare::arbiter {
namespace {

constexpr uint64_t kWaitCountsFromNs = 1'000'000;  // a first-grant wait above 1 ms is a "wait"

}  // namespace

void ArbiterImpl::OnBurstStart(Client& c, uint64_t start_ns) {
  c.tel.burst_start_ns = start_ns;
  c.tel.waiting = true;
  c.tel.burst_wait_ns = 0;
}

void ArbiterImpl::OnGranted(Client& c, GpuIndex g, uint64_t now_ns) {
  if (telemetry_.gpus.size() < gpus_.size()) telemetry_.gpus.resize(gpus_.size());
  ++telemetry_.gpus[g].handoffs;
  if (c.tel.waiting && c.tel.burst_start_ns != 0) {
    const uint64_t wait = now_ns > c.tel.burst_start_ns ? now_ns - c.tel.burst_start_ns : 0;
    c.tel.wait_ns += wait;
    c.tel.burst_wait_ns = wait;
    if (wait > kWaitCountsFromNs) ++c.tel.waits;
  }
  c.tel.waiting = false;
}

void ArbiterImpl::OnReleased(Client& c, GpuIndex g, uint64_t now_ns, bool burst_ended,
                             uint64_t end_ns) {
  if (telemetry_.gpus.size() < gpus_.size()) telemetry_.gpus.resize(gpus_.size());
  if (telemetry_.recent.size() < gpus_.size()) telemetry_.recent.resize(gpus_.size());
  const uint64_t held = now_ns > c.grant_ns ? now_ns - c.grant_ns : 0;
  GpuTelemetry& gt = telemetry_.gpus[g];
  gt.held_ns += held;
  c.tel.held_ns += held;
  telemetry_.recent[g].push_back({c.id, c.name, c.grant_ns, now_ns});
  telemetry_.Prune(now_ns);
  if (!burst_ended) {
    ++gt.slices_expired;
    return;
  }
  if (c.tel.burst_start_ns == 0) return;  // a burst that started before we saw it
  const uint64_t latency = end_ns > c.tel.burst_start_ns ? end_ns - c.tel.burst_start_ns : 0;
  FunctionTelemetry& ft = telemetry_.Function(SeriesKey(c.name, c.pod_namespace, c.pod_name));
  ++ft.bursts;
  ++c.tel.bursts;
  ft.burst.Observe(latency);
  // The token wait of each completed request, observed with it (a burst cut short by the
  // client's exit or death, or one seen twice around a re-grant, is not a request).
  ft.wait.Observe(c.tel.burst_wait_ns);
  c.tel.last_latency_ns = latency;
  if (c.slo_ms != 0) {
    if (latency <= uint64_t{c.slo_ms} * 1'000'000) {
      ++ft.slo_met;
      ++c.tel.slo_met;
    } else {
      ++ft.slo_missed;
      ++c.tel.slo_missed;
      SloMiss miss;
      miss.at_ns = now_ns;
      miss.client = c.id;
      miss.function = c.name;
      miss.gpu = gpus_[g].ordinal;
      miss.latency_ns = latency;
      miss.wait_ns = c.tel.burst_wait_ns;
      miss.slo_ms = c.slo_ms;
      telemetry_.misses.push_back(miss);
      while (telemetry_.misses.size() > Telemetry::kRecentMisses) telemetry_.misses.pop_front();
      spdlog::debug("client {} '{}' missed its SLO: {} us > {} ms", c.id, c.name, latency / 1000,
                    c.slo_ms);
    }
  }
  c.tel.burst_start_ns = 0;
}

void ArbiterImpl::OnSwapDone(Client& c, GpuIndex g, shm::SwapOp op, bool ok, uint64_t bytes,
                             uint64_t duration_ns) {
  if (!ok) return;
  if (telemetry_.gpus.size() < gpus_.size()) telemetry_.gpus.resize(gpus_.size());
  const auto dir = static_cast<size_t>(op == shm::SwapOp::kSwapIn ? SwapDirection::kIn
                                                                   : SwapDirection::kOut);
  GpuTelemetry& gt = telemetry_.gpus[g];
  ++gt.swaps[dir];
  gt.swap_bytes[dir] += bytes;
  gt.swap_time[dir].Observe(duration_ns);
  if (op == shm::SwapOp::kSwapIn) {
    ++c.tel.swaps_in;
  } else {
    ++c.tel.swaps_out;
  }
  c.tel.swap_bytes += bytes;
}

std::string ArbiterImpl::MetricsText(uint64_t now_ns) {
  MetricsInput in;
  in.stats = stats();
  in.clients = clients_.size();
  in.telemetry = &telemetry_;
  for (const auto& [id, c] : clients_) {
    auto& n = in.instances[SeriesKey(c->name, c->pod_namespace, c->pod_name)];
    ++n.total;
    n.warm += IsWarm(c->session.phase()) ? 1 : 0;
  }
  for (const GpuIndex g : gpus_.indices()) {
    GpuMetrics m;
    m.ordinal = gpus_[g].ordinal.value();
    m.total_bytes = gpus_[g].memory_bytes;
    m.drained = gpus_[g].drained;
    m.holder = !gpus_[g].holders.empty();
    for (const auto& [id, c] : clients_) {
      if (c->session.where() == Where::kResident && c->session.gpu() == g) {
        m.resident_bytes += c->quota;
        ++m.resident_clients;
      } else if (c->session.where() != Where::kResident && c->session.gpu() == g) {
        m.swapped_bytes += c->quota;
      }
      if (c->burst_outstanding && !c->session.holding() && c->session.gpu() == g) ++m.queued;
    }
    in.gpus.push_back(m);
  }
  (void)now_ns;
  return PrometheusText(in);
}

}  // namespace gshare::arbiter
