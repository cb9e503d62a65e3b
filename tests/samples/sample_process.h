// A sample server (sample-cnn, -bert, -llm) started as a real process on simcuda for tests:
// fork/exec with LD_LIBRARY_PATH at simcuda, its kernel plugin, and a private device registry
// named from the test's pid and a counter (removed when the process is stopped). Waits for the
// PORT= and READY lines on the child's stdout. Stop() sends SIGTERM and reaps it (SIGKILL after
// a generous safety timeout). Not thread-safe; one object per process.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace sample_test {

class SampleProcess {
 public:
  SampleProcess() = default;
  ~SampleProcess() { Stop(); }
  SampleProcess(const SampleProcess&) = delete;
  SampleProcess& operator=(const SampleProcess&) = delete;

  // Starts `binary` with `args` (plus --port 0) and waits up to timeout_s for READY.
  // Returns "" or what went wrong (including the child's stderr tail).
  std::string Start(const std::string& binary, const std::vector<std::string>& args,
                    double timeout_s = 120);
  // SIGTERM, wait; returns the exit status (or -1 if it had to be killed / was not running).
  int Stop();

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& ready_line() const { return ready_line_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  std::string ready_line_, registry_, stderr_path_;
};

// Runs a program to completion (for CLI tests): exit status, stdout and stderr.
struct ProgramResult {
  int status = -1;
  std::string out, err;
};
// `env`: extra "NAME=VALUE" settings for the child.
ProgramResult RunProgram(const std::string& binary, const std::vector<std::string>& args,
                         double timeout_s = 120, const std::vector<std::string>& env = {});

}  // namespace sample_test
