// Starting and stopping sample servers on simcuda for tests (see sample_process.h).
#include "sample_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sample_test {
namespace {

std::atomic<int> counter{0};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TempPath(const char* what) {
  return "/tmp/gshare-samples-test-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++) + "-" + what;
}

// fork/exec with simcuda's environment; stdout to `out_fd` (or a file), stderr to err_path.
pid_t Spawn(const std::string& binary, const std::vector<std::string>& args,
            const std::string& registry, int out_fd, const std::string& out_path,
            const std::string& err_path, const std::vector<std::string>& env = {}) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  for (const std::string& e : env) {
    const size_t eq = e.find('=');
    if (eq != std::string::npos) setenv(e.substr(0, eq).c_str(), e.c_str() + eq + 1, 1);
  }
  setenv("LD_LIBRARY_PATH", SIMCUDA_LIB_DIR, 1);
  setenv("SIMCUDA_KERNELS", SIMCUDA_KERNELS_LIB, 1);
  setenv("SIMCUDA_REGISTRY", registry.c_str(), 1);
  const int out = out_fd >= 0 ? out_fd : open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (out < 0 || err < 0) _exit(127);
  dup2(out, 1);
  dup2(err, 2);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(binary.c_str(), argv.data());
  _exit(127);
}

int WaitExit(pid_t pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(10000);
  }
}

}  // namespace

std::string SampleProcess::Start(const std::string& binary, const std::vector<std::string>& args,
                                 double timeout_s) {
  registry_ = "/gshare-samples-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  stderr_path_ = TempPath("stderr");
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::vector<std::string> all = args;
  all.push_back("--port");
  all.push_back("0");
  pid_ = Spawn(binary, all, registry_, fds[1], "", stderr_path_);
  close(fds[1]);
  out_fd_ = fds[0];
  if (pid_ < 0) return "fork failed";
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  std::string buf;
  while (ready_line_.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()).count();
    pollfd p{out_fd_, POLLIN, 0};
    char chunk[512];
    ssize_t n = 0;
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0 ||
        (n = read(out_fd_, chunk, sizeof(chunk))) <= 0) {
      return "no READY line from " + binary + " (stdout: '" + buf + "'); stderr: " +
             ReadFile(stderr_path_).substr(0, 2000);
    }
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      const std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.rfind("PORT=", 0) == 0) port_ = std::atoi(line.c_str() + 5);
      if (line.rfind("READY ", 0) == 0) ready_line_ = line;
    }
  }
  return port_ > 0 ? "" : "READY before a PORT= line";
}

int SampleProcess::Stop() {
  int status = -1;
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    status = WaitExit(pid_, 60);
    pid_ = -1;
  }
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
  if (!registry_.empty()) shm_unlink(registry_.c_str());
  if (!stderr_path_.empty()) unlink(stderr_path_.c_str());
  registry_.clear();
  stderr_path_.clear();
  return status;
}

ProgramResult RunProgram(const std::string& binary, const std::vector<std::string>& args,
                         double timeout_s, const std::vector<std::string>& env) {
  const std::string registry = "/gshare-samples-test-" + std::to_string(getpid()) + "-" +
                               std::to_string(counter++);
  const std::string out = TempPath("stdout"), err = TempPath("stderr");
  ProgramResult r;
  const pid_t pid = Spawn(binary, args, registry, -1, out, err, env);
  if (pid < 0) return r;
  r.status = WaitExit(pid, timeout_s);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  unlink(out.c_str());
  unlink(err.c_str());
  shm_unlink(registry.c_str());
  return r;
}

}  // namespace sample_test
