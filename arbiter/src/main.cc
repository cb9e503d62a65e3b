// gshare-arbiter: the node daemon. Parses flags and the config file, raises its open-file limit,
// finds the GPUs, and runs the arbiter's event loop until SIGTERM/SIGINT. Exit status: 0 clean
// shutdown, 2 bad configuration, 1 runtime failure.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>

#include "gshare/arbiter/arbiter.h"
#include "gshare/arbiter/config.h"

namespace {

// Descriptors the arbiter may need at once: each client costs about 3 (its connection, channel
// mapping's memfd while it is set up, doorbell eventfd, pidfd), metrics at most its cap + 2, and
// a margin for the listeners, epoll, timers, the event ring, the driver and the log.
constexpr uint64_t kFdsPerClient = 3;
constexpr uint64_t kFdMargin = 64;

// Raises the soft RLIMIT_NOFILE to the hard limit and logs the result; warns when the
// configuration could need more than that (accepts then fail with EMFILE).
void RaiseFileLimit(const gshare::arbiter::ArbiterConfig& config) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    spdlog::warn("getrlimit(RLIMIT_NOFILE) failed; the open-file limit is unknown");
    return;
  }
  const rlim_t before = lim.rlim_cur;
  if (lim.rlim_cur != lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  const uint64_t metrics_fds =
      config.metrics_address.empty() ? 0 : uint64_t{config.metrics_address.max_connections} + 2;
  const uint64_t needed = uint64_t{config.max_clients} * kFdsPerClient + metrics_fds + kFdMargin;
  spdlog::info("open-file limit {} (was {}; hard limit {}); max_clients {} need about {}",
               static_cast<uint64_t>(lim.rlim_cur), static_cast<uint64_t>(before),
               static_cast<uint64_t>(lim.rlim_max), config.max_clients, needed);
  if (lim.rlim_cur != RLIM_INFINITY && needed > lim.rlim_cur)
    spdlog::warn("open-file limit {} is below what max_clients {} ({} fds each) + metrics ({}) + "
                 "{} spare need ({}): registrations may fail with 'too many open files'; raise "
                 "LimitNOFILE (systemd) / ulimit -n, or lower max_clients",
                 static_cast<uint64_t>(lim.rlim_cur), config.max_clients, kFdsPerClient,
                 metrics_fds, kFdMargin, needed);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gshare::arbiter;
  // Block the shutdown signals before any thread exists (the driver may start some): every
  // thread inherits the mask, and the event loop takes them from its signalfd.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  auto parsed = ParseCommandLine(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "gshare-arbiter: %s\n", parsed.status().message().c_str());
    return 2;
  }
  if (parsed->help) {
    std::fputs(parsed->help->c_str(), stdout);
    return 0;
  }
  const ArbiterConfig& config = parsed->config;
  spdlog::set_default_logger(spdlog::stderr_color_mt("gshare-arbiter"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%f %^%l%$ gshare-arbiter[%P] %v");
  RaiseFileLimit(config);
  auto gpus = ResolveGpus(config);
  if (!gpus.ok()) {
    std::fprintf(stderr, "gshare-arbiter: %s\n", gpus.status().message().c_str());
    return 2;
  }
  auto arbiter = Arbiter::Create(config, std::move(*gpus), /*handle_signals=*/true);
  if (!arbiter.ok()) {
    std::fprintf(stderr, "gshare-arbiter: %s\n", arbiter.status().message().c_str());
    return 2;
  }
  const auto status = (*arbiter)->Run();
  if (!config.summary_path.empty()) {
    if (auto s = WriteSummary(config.summary_path, (*arbiter)->stats()); !s.ok())
      spdlog::error("{}", s.ToString());
  }
  if (!status.ok()) {
    spdlog::error("event loop failed: {}", status.ToString());
    return 1;
  }
  return 0;
}
