// MetricsServer: Prometheus text exposition of the arbiter's statistics (config keys
// `metrics*`), served by cpp-httplib on its own threads at /metrics, over TCP (HOST:PORT) or a
// Unix socket (unix:PATH). The event loop publishes a rendered snapshot (at most every 100 ms);
// the server only serves the latest.
//
// Exposure (docs/security.md, "Metrics exposure"): a non-loopback TCP bind needs an allow-list
// (CheckMetricsExposure); TCP clients outside `metrics_allow` get 403; a Unix socket is created
// with `metrics_socket_mode` like the arbiter's other sockets (shm/socket_file.h). Resources:
// at most `max_connections` connections are served at once (further ones wait in the kernel's
// listen backlog, holding no fd of the arbiter), so the server holds at most max_connections + 2
// fds; an idle connection is closed after kIdleTimeout.
//
// Ownership: owns its server and threads; the destructor stops and joins them (a connection
// being served is dropped within kIdleTimeout of its last byte).
// Thread-safety: Publish() from the loop thread, requests on the server's threads; one mutex.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "gshare/arbiter/arbiter.h"
#include "gshare/arbiter/config.h"
#include "gshare/shm/status.h"

namespace gshare::arbiter {

class MetricsServer {
 public:
  // How long a connection may sit without sending a request (or a byte of one) before it is
  // closed; also the send timeout.
  static constexpr std::chrono::seconds kIdleTimeout{2};

  // Binds `config.address` and starts serving. kInvalidArgument if the exposure is not allowed
  // (CheckMetricsExposure) or the Unix socket's directory is unsafe, kUnavailable if the bind
  // fails or something live is at the Unix socket's path.
  static shm::Result<std::unique_ptr<MetricsServer>> Start(const MetricsConfig& config);
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
