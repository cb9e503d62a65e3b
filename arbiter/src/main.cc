// gshare-arbiter: the node daemon. Parses flags and the config file, finds the GPUs, and runs
// the arbiter's event loop until SIGTERM/SIGINT. Exit status: 0 clean shutdown, 2 bad
// configuration, 1 runtime failure.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <pthread.h>
#include <signal.h>

#include <cstdio>

#include "gshare/arbiter/arbiter.h"
#include "gshare/arbiter/config.h"

int main(int argc, char** argv) {
  using namespace gshare::arbiter;
  // Block the shutdown signals before any thread exists (the driver may start some): every
  // thread inherits the mask, and the event loop takes them from its signalfd.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ConfigResult parsed = ParseCommandLine(argc, argv);
  if (parsed.help) {
    std::fputs(parsed.error.c_str(), stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "gshare-arbiter: %s\n", parsed.error.c_str());
    return 2;
  }
  const ArbiterConfig& config = parsed.config;
  spdlog::set_default_logger(spdlog::stderr_color_mt("gshare-arbiter"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%f %^%l%$ gshare-arbiter[%P] %v");
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
