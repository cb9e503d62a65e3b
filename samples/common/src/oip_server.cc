// The samples' Open Inference Protocol routes on cpp-httplib (see oip_server.h).
#include "sample/oip_server.h"

#include <chrono>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "sample/cuda_check.h"
#include "sample/oip_codec.h"

namespace sample {
namespace {

using nlohmann::json;

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void Fail(httplib::Response& res, int status, const std::string& message) {
  Reply(res, status, json{{"error", message}});
}

}  // namespace

OipServer::OipServer(std::string name, Model* model, CUcontext ctx, uint64_t seed, int threads)
    : name_(std::move(name)), model_(model), ctx_(ctx), seed_(seed),
      http_(std::make_unique<httplib::Server>()) {
  const size_t n = static_cast<size_t>(threads > 0 ? threads : 1);
  http_->new_task_queue = [n] { return new httplib::ThreadPool(n); };
  http_->set_keep_alive_max_count(1000000);
  http_->set_tcp_nodelay(true);  // no 40 ms delayed-ACK stalls on small responses
  http_->set_payload_max_length(size_t{256} << 20);
  Routes();
}

OipServer::~OipServer() = default;

int OipServer::Bind(const std::string& host, int port) {
  if (port == 0) return http_->bind_to_any_port(host);
  return http_->bind_to_port(host, port) ? port : -1;
}

bool OipServer::Listen() {
  const bool ok = http_->listen_after_bind();
  listen_returned_.store(true);
  return ok;
}

void OipServer::Stop() {
  // cpp-httplib 0.11's stop() does nothing before the accept loop has started, so a Stop that
  // comes first (a model that fails to load at once) would leave Listen serving for ever: wait
  // until the loop runs, or Listen has given up.
  while (!http_->is_running() && !listen_returned_.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
}

void OipServer::Routes() {
  httplib::Server& s = *http_;
  s.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, json{{"live", true}});
  });
  s.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
    Reply(res, ready_ ? 200 : 503, json{{"ready", ready_.load()}});
  });
  s.Get("/v2", [this](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, json{{"name", model_->signature().platform}, {"version", "1"},
                         {"extensions", json::array()}});
  });
  // Every /v2/models/{name}... route first checks the name.
  auto known = [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == name_) return true;
    Fail(res, 404, "unknown model '" + std::string(req.matches[1]) + "'; this server serves '" +
                       name_ + "'");
    return false;
  };
  s.Get(R"(/v2/models/([^/]+)(?:/versions/1)?)",
        [this, known](const httplib::Request& req, httplib::Response& res) {
          if (known(req, res)) Reply(res, 200, MetadataJson(name_, model_->signature(), seed_,
                                                            model_->weight_bytes()));
        });
  s.Get(R"(/v2/models/([^/]+)(?:/versions/1)?/ready)",
        [this, known](const httplib::Request& req, httplib::Response& res) {
          if (known(req, res)) Reply(res, ready_ ? 200 : 503, json{{"name", name_}, {"ready", ready_.load()}});
        });
  s.Get(R"(/v2/models/([^/]+)(?:/versions/1)?/stats)",
        [this, known](const httplib::Request& req, httplib::Response& res) {
          if (!known(req, res)) return;
          Reply(res, 200, json{{"name", name_}, {"inference_count", inferences_.load()},
                               {"error_count", errors_.load()},
                               {"busy_ms", static_cast<double>(busy_us_.load()) / 1000.0}});
        });
  s.Post(R"(/v2/models/([^/]+)(?:/versions/1)?/infer)",
         [this, known](const httplib::Request& req, httplib::Response& res) {
           if (!known(req, res)) return;
           if (!ready_) return Fail(res, 503, "model '" + name_ + "' is still loading");
           ParsedRequest parsed;
           std::string error;
           if (!ParseInferRequest(req.body, model_->signature(), &parsed, &error)) {
             ++errors_;
             return Fail(res, 400, error);
           }
           InferResult result;
           {
             std::lock_guard<std::mutex> lock(infer_mu_);
             const auto start = std::chrono::steady_clock::now();
             const CUresult r = cuCtxSetCurrent(ctx_);
             result = r == CUDA_SUCCESS ? model_->Infer(parsed.inputs)
                                        : InferResult::Internal(CudaError(r, "cuCtxSetCurrent"));
             busy_us_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                   std::chrono::steady_clock::now() - start)
                                                   .count());
           }
           if (!result.error.empty()) {
             ++errors_;
             if (!result.bad_request) spdlog::error("inference failed: {}", result.error);
             return Fail(res, result.bad_request ? 400 : 500, result.error);
           }
           ++inferences_;
           res.status = 200;
           res.set_content(InferResponseJson(name_, parsed.id, result.outputs,
                                             RequestDigest(name_, seed_, parsed.inputs)),
                           "application/json");
         });
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413) {
      Fail(res, 413, "request body too large (form-encoded bodies are limited to a few KiB: "
                     "send Content-Type: application/json)");
    } else if (res.status == 404) {
      Fail(res, 404, "no route for " + req.method + " " + req.path);
    } else {
      Fail(res, res.status, "HTTP " + std::to_string(res.status) + " for " + req.method + " " + req.path);
    }
  });
}

}  // namespace sample
