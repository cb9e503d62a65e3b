// MetricsServer: /metrics in the Prometheus text format, served by cpp-httplib.
#include "metrics_server.h"

#include <httplib.h>

#include <mutex>
#include <thread>

namespace gshare::arbiter {

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::mutex mu;
  std::string text;  // guarded by mu
};

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

void MetricsServer::Publish(std::string text) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->text = std::move(text);
}

}  // namespace gshare::arbiter
