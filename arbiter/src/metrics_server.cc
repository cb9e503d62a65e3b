// MetricsServer: /metrics in the Prometheus text format, served by cpp-httplib.
#include "metrics_server.h"

#include <httplib.h>

#include <mutex>
#include <sstream>
#include <thread>

namespace gshare::arbiter {

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::mutex mu;
  std::string text;  // guarded by mu
};

std::string PrometheusText(const ArbiterStats& s, size_t clients) {
  std::ostringstream o;
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    o << "# HELP gshare_arbiter_" << name << " " << help << "\n# TYPE gshare_arbiter_" << name
      << " counter\ngshare_arbiter_" << name << " " << v << "\n";
  };
  o << "# HELP gshare_arbiter_clients Registered clients.\n# TYPE gshare_arbiter_clients gauge\n"
    << "gshare_arbiter_clients " << clients << "\n";
  counter("registrations_total", "Accepted registrations.", s.registrations);
  counter("re_registrations_total", "Registrations after an arbiter restart.", s.re_registrations);
  counter("refusals_total", "Refused registrations.", s.refusals);
  counter("grants_total", "Token grants.", s.grants);
  counter("yields_total", "Token releases.", s.yields);
  counter("preemptions_total", "Preemption requests.", s.preemptions);
  counter("swap_ins_total", "Swap-in orders.", s.swap_ins);
  counter("swap_outs_total", "Swap-out orders.", s.swap_outs);
  counter("client_deaths_total", "Clients whose connection closed.", s.client_deaths);
  counter("malformed_channels_total", "Clients disconnected for a malformed channel.",
          s.malformed_channels);
  counter("enforcements_total", "Holders checkpointed for not yielding.", s.enforcements);
  counter("deep_evictions_total", "Idle vGPUs checkpointed.", s.deep_evictions);
  counter("restores_total", "Checkpointed vGPUs restored.", s.restores);
  o << "# HELP gshare_arbiter_gpu_reserved_bytes Memory reserved by resident vGPUs.\n"
       "# TYPE gshare_arbiter_gpu_reserved_bytes gauge\n";
  for (const auto& g : s.gpus)
    o << "gshare_arbiter_gpu_reserved_bytes{gpu=\"" << g.ordinal << "\"} " << g.reserved_bytes << "\n";
  o << "# HELP gshare_arbiter_gpu_usable_bytes GPU memory minus the reserve.\n"
       "# TYPE gshare_arbiter_gpu_usable_bytes gauge\n";
  for (const auto& g : s.gpus)
    o << "gshare_arbiter_gpu_usable_bytes{gpu=\"" << g.ordinal << "\"} " << g.usable_bytes << "\n";
  o << "# HELP gshare_arbiter_gpu_peak_reserved_bytes Most memory ever reserved at once.\n"
       "# TYPE gshare_arbiter_gpu_peak_reserved_bytes gauge\n";
  for (const auto& g : s.gpus)
    o << "gshare_arbiter_gpu_peak_reserved_bytes{gpu=\"" << g.ordinal << "\"} "
      << g.peak_reserved_bytes << "\n";
  return o.str();
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

shm::Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& address) {
  const auto colon = address.rfind(':');
  const std::string host = address.substr(0, colon);
  const int port = std::stoi(address.substr(colon + 1));  // validated by the config
  auto impl = std::make_unique<Impl>();
  Impl* raw = impl.get();
  raw->server.Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(raw->mu);
    res.set_content(raw->text, "text/plain; version=0.0.4");
  });
  if (!raw->server.bind_to_port(host, port))
    return shm::Status(shm::StatusCode::kUnavailable, "metrics: cannot listen on " + address);
  raw->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void MetricsServer::Publish(const ArbiterStats& stats, size_t clients) {
  std::string text = PrometheusText(stats, clients);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->text = std::move(text);
}

}  // namespace gshare::arbiter
