// The Prometheus text of /metrics from the arbiter's state (the telemetry it feeds is counted
// by Telemetry's hooks, telemetry.h).
#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "metrics_text.h"

namespace gshare::arbiter {
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
