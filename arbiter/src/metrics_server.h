// MetricsServer: Prometheus text exposition of the arbiter's statistics on HOST:PORT
// (config key `metrics`), served by cpp-httplib on its own thread at /metrics. The event loop
// publishes a snapshot after each iteration; the server only ever reads the latest snapshot.
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

  void Publish(const ArbiterStats& stats, size_t clients);

  struct Impl;

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The Prometheus text for `stats` (exposed for tests).
std::string PrometheusText(const ArbiterStats& stats, size_t clients);

}  // namespace gshare::arbiter
