// MetricsServer: Prometheus text exposition of the arbiter's statistics on HOST:PORT
// (config key `metrics`), served by cpp-httplib on its own thread at /metrics. The event loop
// publishes a rendered snapshot (at most every 100 ms); the server only serves the latest.
//
// Ownership: owns its server and thread; the destructor stops and joins them.
// Thread-safety: Publish() from the loop thread, requests on the server's threads; one mutex.
#pragma once

#include <memory>
#include <string>

#include "gshare/arbiter/arbiter.h"
#include "gshare/shm/status.h"

namespace gshare::arbiter {

class MetricsServer {
 public:
  // Binds `address` ("HOST:PORT") and starts serving. kUnavailable if the bind fails.
  static shm::Result<std::unique_ptr<MetricsServer>> Start(const std::string& address);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Replaces the page served at /metrics (see metrics_text.h).
  void Publish(std::string text);

  struct Impl;

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gshare::arbiter
