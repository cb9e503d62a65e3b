// A child process started with posix_spawn, owned by one object: stopping it (SIGTERM, then
// SIGKILL after a grace period) and reaping it are the owner's job, and the destructor does both
// if the owner did not, so no child outlives gshare-demo on any path (errors, Ctrl-C).
//
// Thread-safety: one thread per object.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gshare/workload/result.h"

namespace gshare::demo {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is the program's path (not searched in PATH)
  std::vector<std::string> env;   // the whole environment, "KEY=VALUE"
  std::string stdout_path;        // created/truncated; empty: /dev/null
  std::string stderr_path;        // created/truncated; empty: /dev/null
};

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // Stop(1 s) if still running

  static workload::Result<ChildProcess> Spawn(const SpawnSpec& spec);

  pid_t pid() const { return pid_; }
  // True while the child has not exited (reaps it without blocking when it has).
  bool Running();
  // The exit status once reaped: the exit code, or 128 + signal number.
  std::optional<int> status() const { return status_; }
  // Waits up to `timeout` for the child to exit by itself; returns its status if it did.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGTERM (or `signal`), then SIGKILL if it has not exited after `grace`; returns the status.
  int Stop(std::chrono::milliseconds grace, int signal = 15);

 private:
  void Reap(int wait_status);

  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Environment helpers: `env` with KEY set to VALUE (replacing any earlier KEY=).
void SetEnv(std::vector<std::string>& env, const std::string& key, const std::string& value);
// This process's environment as a list.
std::vector<std::string> CurrentEnvironment();

}  // namespace gshare::demo
