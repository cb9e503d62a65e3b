// The HTTP/JSON Open Inference Protocol server of a sample (cpp-httplib): health, model
// metadata, readiness, statistics and inference for one model under one name.
//
//   GET  /v2/health/live          200 {"live":true}
//   GET  /v2/health/ready         200 {"ready":true} once the weights are loaded, else 503
//   GET  /v2                      server metadata
//   GET  /v2/models/{name}        model metadata (oip_codec.h), 404 for another name
//   GET  /v2/models/{name}/ready  200 / 503
//   GET  /v2/models/{name}/stats  {"inference_count","error_count","busy_ms"}
//   POST /v2/models/{name}[/versions/1]/infer
// Errors are {"error": "..."} with 400 (malformed request), 404 (unknown model or path),
// 503 (not ready) or 500 (driver failure); the server keeps serving after each.
//
// Thread-safety: handlers run on the server's thread pool; inferences are serialised by a lock
// (one request on the GPU at a time, batch as the client sends it) and each makes the model's
// context current on its thread first.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "sample/model.h"

namespace httplib {
class Server;
}

namespace sample {

class OipServer {
 public:
  // `model` and `ctx` must outlive the server. `threads` > 0 handler threads.
  OipServer(std::string name, Model* model, CUcontext ctx, uint64_t seed, int threads);
  ~OipServer();
  OipServer(const OipServer&) = delete;
  OipServer& operator=(const OipServer&) = delete;

  // Binds host:port (port 0 picks one). Returns the bound port, or -1.
  int Bind(const std::string& host, int port);
  // Serves until Stop(); call on its own thread after Bind.
  bool Listen();
  // Thread-safe; Listen returns soon after. Listen must have been started on its thread.
  void Stop();
  // Marks the model loaded (ready endpoints turn 200).
  void SetReady() { ready_.store(true); }

 private:
  void Routes();

  std::string name_;
  Model* model_;
  CUcontext ctx_;
  uint64_t seed_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> listen_returned_{false};
  std::mutex infer_mu_;
  std::atomic<uint64_t> inferences_{0}, errors_{0}, busy_us_{0};
};

}  // namespace sample
