// Helpers for the shm tests: a per-test temporary directory and spawning the helper program
// (shm_test_helper) as a real child process with chosen fds inherited and stdout captured.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gshare/shm/channel_layout.h"
#include "gshare/shm/wire.h"

namespace gshare::shm::testing {

// An accepting registration reply as a test arbiter sends it.
inline RegisterReply AcceptReply(uint32_t client_id, uint32_t gpu, uint64_t quota, uint64_t epoch) {
  RegisterReply reply;
  reply.accepted = true;
  reply.gpu = gpu;
  reply.client_id = client_id;
  reply.channel_size = kChannelSegmentSize;
  reply.quota_bytes = quota;
  reply.arbiter_epoch = epoch;
  return reply;
}

// A small valid request (1 MiB, 10 ms).
inline RegisterRequest SmallRequest() {
  RegisterRequest r;
  r.quota_bytes = 1 << 20;
  r.slo_ms = 10;
  return r;
}

// mkdtemp under /tmp with the pid in the name; mode 0755 so a child of another uid can
// reach sockets inside; removed recursively on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/gshare-shm-test-" + std::to_string(::getpid()) + "-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
    ::chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // read end of the child's stdout
};

// Starts shm_test_helper with `args`; the fds in `inherit` stay open in the child (at the
// same numbers).
inline Child SpawnHelper(const std::vector<std::string>& args, const std::vector<int>& inherit = {}) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipefd[1], STDOUT_FILENO);
    for (int fd : inherit) ::fcntl(fd, F_SETFD, 0);
    std::vector<char*> argv;
    std::string prog = SHM_TEST_HELPER;
    argv.push_back(prog.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(prog.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  return Child{pid, pipefd[0]};
}

// Reads everything the child writes to stdout until EOF.
inline std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  return out;
}

// Waits for the child (killing it after `timeout`, a safety net); returns its exit code, or
// 128 + signal.
inline int WaitChild(pid_t pid, std::chrono::seconds timeout = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Runs a helper to completion; returns {exit code, stdout}.
inline std::pair<int, std::string> RunHelper(const std::vector<std::string>& args,
                                             const std::vector<int>& inherit = {}) {
  Child c = SpawnHelper(args, inherit);
  std::string out = ReadAll(c.stdout_fd);
  ::close(c.stdout_fd);
  return {WaitChild(c.pid), out};
}

// Polls `pred` until true or `timeout` (a safety net, not a timed assertion).
template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::seconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace gshare::shm::testing
