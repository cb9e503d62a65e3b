// ArbiterMonitor (arbiter_monitor.h): polls the arbiter's status over its control socket.
#include "arbiter_monitor.h"

#include <spdlog/spdlog.h>

#include "gshare/arbiter/control_client.h"

namespace gshare::deviceplugin {

ArbiterMonitor::ArbiterMonitor(const PluginConfig& config)
    : control_socket_(config.control_socket_path()),
      interval_(config.poll_interval),
      timeout_(config.arbiter_timeout),
      inventory_(config.unit_bytes, config.overcommit) {}

ArbiterMonitor::~ArbiterMonitor() { Stop(); }

void ArbiterMonitor::Start() {
  PollOnce();
  thread_ = std::thread([this] { Run(); });
}

void ArbiterMonitor::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ArbiterMonitor::stopped() const {
  std::lock_guard lock(mu_);
  return stop_;
}

Snapshot ArbiterMonitor::Current(uint64_t* generation) const {
  std::lock_guard lock(mu_);
  if (generation != nullptr) *generation = generation_;
  return inventory_.snapshot();
}

uint64_t ArbiterMonitor::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return stop_ || generation_ != seen; });
  return generation_;
}

void ArbiterMonitor::PollOnce() {
  // The request runs without the lock: it may take up to timeout_.
  const auto reply = arbiter::ControlCall(control_socket_, {{"cmd", "status"}}, timeout_);
  std::lock_guard lock(mu_);
  const bool changed = inventory_.Update(reply);
  const Snapshot& s = inventory_.snapshot();
  if (s.problem != last_problem_) {
    if (s.problem.empty()) {
      spdlog::info("arbiter at {} answers: {} GPU(s)", control_socket_, s.gpus.size());
    } else {
      spdlog::error("arbiter at {} unreachable, every device is unhealthy: {}", control_socket_,
                    s.problem);
    }
    last_problem_ = s.problem;
  }
  if (changed) {
    ++generation_;
    size_t healthy = 0;
    const auto devices = s.Devices();
    for (const auto& d : devices) healthy += d.healthy ? 1 : 0;
    for (const auto& [ordinal, gpu] : s.gpus)
      spdlog::info("GPU {}: {} unit(s), {}", ordinal, gpu.units,
                   !gpu.present ? "lost (no longer managed by the arbiter)"
                   : gpu.drained ? "drained" : "available");
    spdlog::info("device list changed: {} device(s), {} healthy", devices.size(), healthy);
    cv_.notify_all();
  }
}

void ArbiterMonitor::Run() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, interval_, [&] { return stop_; })) return;
    }
    PollOnce();
  }
}

}  // namespace gshare::deviceplugin
