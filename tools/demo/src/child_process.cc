// ChildProcess: posix_spawn with stdout/stderr redirected to files, non-blocking reaping, and
// a SIGTERM-then-SIGKILL stop (see child_process.h).
#include "gshare/demo/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace gshare::demo {
namespace {

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Frees a posix_spawn_file_actions_t / posix_spawnattr_t on every path.
struct SpawnResources {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnResources() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnResources() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnResources(const SpawnResources&) = delete;
  SpawnResources& operator=(const SpawnResources&) = delete;
};

}  // namespace

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), status_(other.status_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !status_) Stop(std::chrono::seconds(1));
    pid_ = other.pid_;
    status_ = other.status_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) Stop(std::chrono::seconds(1));
}

workload::Result<ChildProcess> ChildProcess::Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return workload::Fail("spawn: empty command");
  SpawnResources r;
  const std::string out = spec.stdout_path.empty() ? "/dev/null" : spec.stdout_path;
  const std::string err = spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path;
  posix_spawn_file_actions_addopen(&r.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&r.actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&r.actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // The child starts with default signal dispositions and an empty mask, whatever ours are.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&r.attr, &all);
  posix_spawnattr_setsigmask(&r.attr, &none);
  posix_spawnattr_setflags(&r.attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &r.actions, &r.attr, argv.data(), envp.data());
  if (rc != 0) return workload::Fail("spawn " + spec.argv[0] + ": " + std::strerror(rc));
  ChildProcess child;
  child.pid_ = pid;
  return child;
}

void ChildProcess::Reap(int wait_status) {
  if (WIFEXITED(wait_status)) status_ = WEXITSTATUS(wait_status);
  else if (WIFSIGNALED(wait_status)) status_ = 128 + WTERMSIG(wait_status);
  else status_ = 255;
}

bool ChildProcess::Running() {
  if (pid_ <= 0 || status_) return false;
  int ws = 0;
  const pid_t r = waitpid(pid_, &ws, WNOHANG);
  if (r == pid_) {
    Reap(ws);
    return false;
  }
  if (r < 0 && errno == ECHILD) {
    status_ = 255;
    return false;
  }
  return true;
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

int ChildProcess::Stop(std::chrono::milliseconds grace, int signal) {
  if (!Running()) return status_.value_or(255);
  ::kill(pid_, signal);
  if (auto s = Wait(grace)) return *s;
  ::kill(pid_, SIGKILL);
  int ws = 0;
  while (waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
  }
  Reap(ws);
  return *status_;
}

void SetEnv(std::vector<std::string>& env, const std::string& key, const std::string& value) {
  const std::string prefix = key + "=";
  for (std::string& e : env) {
    if (e.compare(0, prefix.size(), prefix) == 0) {
      e = prefix + value;
      return;
    }
  }
  env.push_back(prefix + value);
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace gshare::demo
