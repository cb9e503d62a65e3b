// ChildProcess: runs a helper program as a real child process (posix_spawn) with extra
// environment variables, pipes on stdin/stdout/stderr, line-oriented talk, and a bounded wait.
// For the shim's multi-process tests: every test program runs under LD_PRELOAD=libgshare.so.
//
// Ownership: owns the pipes and reaps the child in its destructor (killing it if still running).
// Thread-safety: one thread per object.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace gshare::test {

class ChildProcess {
 public:
  // Starts argv[0] with the current environment plus `env` (a value of "" removes the variable).
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  [[nodiscard]] bool started() const { return pid_ > 0; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  // Writes one line (a newline is appended) to the child's stdin.
  bool WriteLine(const std::string& line);
  // Reads one line from stdout (without the newline); false on EOF or after `timeout`.
  bool ReadLine(std::string* line, std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Closes stdin, reads the rest of stdout/stderr, waits (up to `timeout`, then SIGKILL).
  // Returns the exit status as from waitpid (use WIFEXITED etc.).
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(120));
  [[nodiscard]] const std::string& out() const { return out_; }  // stdout after Wait
  [[nodiscard]] const std::string& err() const { return err_; }  // stderr after Wait

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int stdout_ = -1;
  int stderr_ = -1;
  std::string pending_;  // stdout read but not yet returned by ReadLine
  std::string out_;
  std::string err_;
  bool reaped_ = false;
  int status_ = 0;
};

// Runs a program to completion; returns its stdout parsed as "key=value" lines (other lines are
// kept under the key "" joined by newlines) plus "exit" -> the exit code (or "signal N").
std::map<std::string, std::string> RunKeyValues(const std::vector<std::string>& argv,
                                                const std::map<std::string, std::string>& env,
                                                std::string* stderr_text = nullptr);

// Sends one request line to a Unix stream socket and returns the reply line ("" on failure).
std::string UnixRequest(const std::string& path, const std::string& request);

}  // namespace gshare::test
