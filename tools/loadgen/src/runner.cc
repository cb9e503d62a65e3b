// Dispatching, sending and checking requests (see runner.h).
#include "gshare/loadgen/runner.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace gshare::loadgen {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::unique_ptr<httplib::Client> Connect(const Target& t, double timeout_s) {
  auto c = std::make_unique<httplib::Client>(t.host, t.port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);  // headers and body go out at once: no delayed-ACK stalls
  const auto us = std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  c->set_connection_timeout(us);
  c->set_read_timeout(us);
  c->set_write_timeout(us);
  return c;
}

std::string ModelPath(const Target& t) { return "/v2/models/" + t.model; }

CheckedAnswer Failed(Outcome outcome, StatusCode code, std::string message) {
  CheckedAnswer a;
  a.outcome = outcome;
  a.error = Status(code, std::move(message));
  return a;
}

// Shared state of one run.
class Session {
 public:
  Session(const std::vector<TargetInfo>& targets, const RunOptions& o) : targets_(targets), o_(o) {}

  void Push(const Arrival& a) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(a);
    cv_.notify_one();
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  void Worker(Clock::time_point start) {
    std::map<uint32_t, std::unique_ptr<httplib::Client>> clients;
    for (;;) {
      Arrival a;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;
        a = queue_.front();
        queue_.pop_front();
      }
      const TargetInfo& t = targets_[a.target];
      if (o_.max_wall_s > 0 &&
          Clock::now() > start + std::chrono::milliseconds(static_cast<int64_t>(o_.max_wall_s * 1000))) {
        std::lock_guard<std::mutex> lock(mu_);
        result_.records.push_back({a.target, a.at_us, 0, Outcome::kSkipped});
        continue;
      }
      std::unique_ptr<httplib::Client>& client = clients[a.target];
      if (!client) client = Connect(t.target, o_.timeout_s);
      const Request req = BuildRequest(t.kind, t.target.model, t.seed, o_.input_seed, a.target, a, o_.shape);
      httplib::Result res = client->Post(ModelPath(t.target) + "/infer", req.body, "application/json");
      const auto scheduled = start + std::chrono::microseconds(a.at_us);
      Record r;
      r.target = a.target;
      r.scheduled_us = a.at_us;
      r.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - scheduled).count();
      const CheckedAnswer answer = Check(res, a.target, req.digest);
      r.outcome = answer.outcome;
      if (r.outcome == Outcome::kTransport) client.reset();  // reconnect next time
      std::lock_guard<std::mutex> lock(mu_);
      if (!answer.error.ok() && result_.error_examples.size() < 5) {
        result_.error_examples.push_back(t.target.name + ": " + answer.error.message());
      }
      result_.records.push_back(r);
    }
  }
  RunResult& result() { return result_; }

 private:
  // An answer's outcome, and unless kOk its error (CheckAnswer's, or kMalformed for outputs
  // that differ from an earlier answer to the same request).
  CheckedAnswer Check(const httplib::Result& res, uint32_t target, const std::string& digest) {
    if (!res)
      return Failed(Outcome::kTransport, StatusCode::kUnavailable,
                    "request failed: " + httplib::to_string(res.error()));
    CheckedAnswer answer = CheckAnswer(res->status, res->body, digest);
    if (answer.outcome != Outcome::kOk) return answer;
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = seen_.try_emplace({target, digest}, answer.fingerprint);
    if (!inserted && it->second != answer.fingerprint)
      return Failed(Outcome::kInconsistent, StatusCode::kMalformed,
                    "outputs differ from an earlier answer to the same request (digest " +
                        digest + ")");
    return answer;
  }

  const std::vector<TargetInfo>& targets_;
  const RunOptions& o_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Arrival> queue_;
  bool closed_ = false;
  std::map<std::pair<uint32_t, std::string>, std::string> seen_;
  RunResult result_;
};

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kTransport: return "transport";
    case Outcome::kHttpError: return "http_error";
    case Outcome::kBadResponse: return "bad_response";
    case Outcome::kWrongDigest: return "wrong_digest";
    case Outcome::kInconsistent: return "inconsistent";
    case Outcome::kSkipped: return "skipped";
  }
  return "unknown";
}

CheckedAnswer CheckAnswer(int http_status, const std::string& body, const std::string& digest) {
  if (http_status != 200)
    return Failed(Outcome::kHttpError, StatusCode::kRefused,
                  fmt::format("HTTP {}: {}", http_status, body.substr(0, 200)));
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("outputs") || !j["outputs"].is_array())
    return Failed(Outcome::kBadResponse, StatusCode::kMalformed,
                  "response is not an inference response: " + body.substr(0, 200));
  CheckedAnswer answer;
  std::string got_digest;
  for (const json& out : j["outputs"]) {
    if (!out.is_object() || !out.contains("name") || !out.contains("data")) continue;
    if (out["name"] == "digest") {
      if (out["data"].is_array() && !out["data"].empty() && out["data"][0].is_string()) {
        got_digest = out["data"][0].get<std::string>();
      }
    } else {
      answer.fingerprint += out.dump();
    }
  }
  if (got_digest.empty())
    return Failed(Outcome::kBadResponse, StatusCode::kMalformed, "response has no digest output");
  if (got_digest != digest)
    return Failed(Outcome::kWrongDigest, StatusCode::kMalformed,
                  "digest " + got_digest + " does not match the request's " + digest);
  return answer;
}

workload::Result<std::vector<TargetInfo>> Discover(const std::vector<Target>& targets,
                                                   double wait_ready_s) {
  std::vector<TargetInfo> out;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(wait_ready_s * 1000));
  for (const Target& t : targets) {
    auto client = Connect(t, 5.0);
    std::string last = "no answer";
    bool ready = false;
    for (;;) {
      httplib::Result r = client->Get(ModelPath(t) + "/ready");
      if (r && r->status == 200) {
        ready = true;
        break;
      }
      last = r ? fmt::format("HTTP {} {}", r->status, r->body.substr(0, 200))
               : "connection failed: " + httplib::to_string(r.error());
      if (r && r->status == 404) break;  // wrong model name: waiting will not help
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!ready) return workload::Fail("target '" + t.name + "' (" + t.url + ") is not ready: " + last);
    httplib::Result m = client->Get(ModelPath(t));
    const json j = m && m->status == 200 ? json::parse(m->body, nullptr, false) : json();
    if (!j.is_object() || !j.contains("platform") || !j["platform"].is_string()) {
      return workload::Fail("target '" + t.name + "': no usable model metadata at " + t.url);
    }
    TargetInfo info;
    info.target = t;
    info.platform = j["platform"].get<std::string>();
    auto kind = KindOfPlatform(info.platform);
    if (!kind.ok()) return workload::Fail("target '" + t.name + "': " + kind.status().message());
    info.kind = *kind;
    if (j.contains("parameters") && j["parameters"].is_object() &&
        j["parameters"].contains("seed") && j["parameters"]["seed"].is_number_unsigned()) {
      info.seed = j["parameters"]["seed"].get<uint64_t>();
    }
    out.push_back(std::move(info));
  }
  return out;
}

RunResult Run(const std::vector<TargetInfo>& targets, const Plan& plan, const RunOptions& o) {
  Session session(targets, o);
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, o.concurrency); ++i) {
    workers.emplace_back([&session, start] { session.Worker(start); });
  }
  for (const Arrival& a : plan.arrivals) {
    std::this_thread::sleep_until(start + std::chrono::microseconds(a.at_us));
    session.Push(a);
  }
  session.Close();
  for (std::thread& w : workers) w.join();
  RunResult r = std::move(session.result());
  r.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace gshare::loadgen
