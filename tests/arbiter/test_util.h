// Helpers for the arbiter's multi-process tests: a per-test temporary directory, spawning
// programs with their output captured in files, waiting with a safety timeout, and running
// the real gshare-arbiter.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gshare::arbiter::testing {

// A fresh directory /tmp/gshare-arbiter-<test>-<pid>-<n>, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// fork+exec `argv` with stdout to `out_file` and stderr to `err_file` ("" = inherit), extra
// environment `env` ("K=V") added to ours. Returns the pid (> 0) or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_file,
            const std::string& err_file, const std::vector<std::string>& env = {});

// Multiplier for the tests' safety-net waits in slow builds: GSHARE_TEST_TIME_SCALE, which
// scripts/sanitize.sh sets (3 under ASan, 10 under TSan); 1 when unset or not a positive integer.
int TimeScale();
// `safety_net` * TimeScale(): a wait that only bounds a hang, never a measurement.
std::chrono::milliseconds Scaled(std::chrono::milliseconds safety_net);

// Waits for `pid` up to `timeout` (a safety net, not a measurement); returns the wait status,
// or -1 on timeout (the process is then killed).
int WaitFor(pid_t pid, std::chrono::milliseconds timeout);

// Exit code if the process exited normally, else -1 - signal.
int ExitCode(int wait_status);

std::string ReadFile(const std::string& path);
// Parses the last line of `path` as JSON (the fake function's report); null on failure.
nlohmann::json LastJsonLine(const std::string& path);

// Polls until `path` exists (safety timeout); false on timeout.
bool WaitForFile(const std::string& path, std::chrono::milliseconds timeout);

// A loopback TCP port nobody listens on right now (-1 on failure).
int FreeTcpPort();

// Runs `argv` to completion (safety timeout) and returns its exit code, stdout and stderr.
struct ToolResult {
  int code = -1000;
  std::string out;
  std::string err;
};
ToolResult RunTool(const TempDir& dir, const std::vector<std::string>& argv,
                   const std::vector<std::string>& env = {},
                   std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The gshare-arbiter under test, with its socket, event ring and summary in `dir`.
class ArbiterProcess {
 public:
  ArbiterProcess(const TempDir& dir, std::vector<std::string> extra_args);
  ~ArbiterProcess();
  bool Start();                 // spawns and waits for the socket
  nlohmann::json Stop();        // SIGTERM, wait, return the summary (null on failure)
  void Kill();                  // SIGKILL, wait
  pid_t pid() const { return pid_; }
  // Extra environment ("K=V") for the daemon, e.g. simcuda's.
  std::vector<std::string> env;
  const std::string& socket() const { return socket_; }
  // The event ring of the i-th start.
  std::string events(int i = 0) const { return events_ + std::to_string(i); }
  std::string log() const { return log_; }

 private:
  std::vector<std::string> args_;
  std::string socket_;
  std::string events_;
  std::string summary_;
  std::string log_;
  pid_t pid_ = -1;
  int starts_ = 0;
};

}  // namespace gshare::arbiter::testing
