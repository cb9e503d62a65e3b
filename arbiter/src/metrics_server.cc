// MetricsServer: /metrics in the Prometheus text format, served by cpp-httplib with a bounded
// worker pool, short timeouts, an optional client allow-list and an optional Unix socket.
#include "metrics_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "gshare/shm/socket_file.h"

namespace gshare::arbiter {
namespace {

// cpp-httplib's accept loop hands each accepted connection to a TaskQueue. Its own ThreadPool
// queues without bound, so idle connections pile up as fds (1,100 of them exhausted the arbiter's
// 1024). This pool runs `n` connections at once and makes enqueue() wait while all n are busy:
// the accept loop stops accepting, and further connections wait in the kernel's listen backlog,
// costing the arbiter no fd. Fds held: the listener + n being served + 1 waiting in enqueue().
class BoundedPool : public httplib::TaskQueue {
 public:
  explicit BoundedPool(size_t n) : n_(n) {
    for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~BoundedPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [this] { return busy_ + jobs_.size() < n_ || stop_; });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    ready_.notify_all();
    space_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return !jobs_.empty() || stop_; });
        if (jobs_.empty()) return;  // stopping, nothing left
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        ++busy_;
      }
      fn();  // serves one connection and closes it
      {
        std::lock_guard<std::mutex> lock(mu_);
        --busy_;
      }
      space_.notify_one();
    }
  }

  const size_t n_;
  std::mutex mu_;
  std::condition_variable ready_;  // a job or stop
  std::condition_variable space_;  // a worker became free
  std::deque<std::function<void()>> jobs_;
  size_t busy_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

bool Allowed(const MetricsConfig& config, const std::string& remote) {
  if (config.is_unix() || config.allow_any || config.allow.empty()) return true;
  for (const IpNet& net : config.allow)
    if (net.Contains(remote)) return true;
  return false;
}

}  // namespace

struct MetricsServer::Impl {
  MetricsConfig config;
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> listen_returned{false};
  std::mutex mu;
  std::string text;  // guarded by mu
  std::atomic<bool> refusal_logged{false};
  std::string unix_path;  // the Unix socket's file, removed at the end if still ours
  shm::SocketFileId unix_id;
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

shm::Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const MetricsConfig& config) {
  if (auto s = CheckMetricsExposure(config); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  Impl* raw = impl.get();
  raw->config = config;
  httplib::Server& server = raw->server;
  const size_t workers = config.max_connections;
  server.new_task_queue = [workers] { return new BoundedPool(workers); };
  server.set_keep_alive_timeout(kIdleTimeout.count());
  server.set_read_timeout(kIdleTimeout);
  server.set_write_timeout(kIdleTimeout);
  server.set_payload_max_length(4096);  // GET only
  server.set_pre_routing_handler([raw](const httplib::Request& req, httplib::Response& res) {
    if (Allowed(raw->config, req.remote_addr)) return httplib::Server::HandlerResponse::Unhandled;
    if (!raw->refusal_logged.exchange(true))
      spdlog::warn("metrics: refused a scrape from {} (not in metrics_allow; further refusals "
                   "are logged at debug level)", req.remote_addr);
    else
      spdlog::debug("metrics: refused a scrape from {}", req.remote_addr);
    res.status = 403;
    res.set_header("Connection", "close");
    res.set_content("forbidden\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(raw->mu);
    res.set_content(raw->text, "text/plain; version=0.0.4");
  });
  std::string host;
  int port = 0;
  if (config.is_unix()) {
    host = config.address.substr(5);
    if (auto s = shm::PrepareSocketPath(host, SOCK_STREAM); !s.ok())
      return shm::Status(s.code(), "metrics: " + s.message());
    // The socket's file is born with the mode (fchmod before cpp-httplib's bind).
    const mode_t mode = config.socket_mode;
    server.set_address_family(AF_UNIX);
    server.set_socket_options([mode](socket_t sock) { (void)::fchmod(sock, mode); });
    port = 80;  // unused for AF_UNIX, but port 0 makes cpp-httplib 0.11 ask for a TCP port
  } else {
    const auto colon = config.address.rfind(':');
    host = config.address.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    port = std::stoi(config.address.substr(colon + 1));  // validated by the config
  }
  if (!server.bind_to_port(host, port))
    return shm::Status(shm::StatusCode::kUnavailable, "metrics: cannot listen on " + config.address);
  if (config.is_unix()) {
    auto id = shm::SetSocketFileMode(host, config.socket_mode);
    if (!id.ok()) return shm::Status(id.status().code(), "metrics: " + id.status().message());
    raw->unix_path = host;
    raw->unix_id = *id;
  } else if (!IsLoopbackHost(host)) {
    spdlog::warn("metrics: serving {} beyond loopback to {}", config.address,
                 config.allow_any ? "every client (metrics_allow = any)" : "the metrics_allow list");
  }
  raw->thread = std::thread([raw] {
    raw->server.listen_after_bind();
    raw->listen_returned.store(true);
  });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::~MetricsServer() {
  // stop() does nothing before the accept loop has started (cpp-httplib 0.11): wait for it, or
  // for listen_after_bind to have given up. A bounded wait would leave the join below hanging
  // on a loaded machine where the thread starts late.
  while (!impl_->server.is_running() && !impl_->listen_returned.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  shm::RemoveSocketFile(impl_->unix_path, impl_->unix_id);
}

void MetricsServer::Publish(std::string text) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->text = std::move(text);
}

}  // namespace gshare::arbiter
