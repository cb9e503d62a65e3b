// Helpers for the arbiter's multi-process tests (see test_util.h).
#include "test_util.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

extern char** environ;

namespace gshare::arbiter::testing {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info != nullptr ? info->name() : "test";
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  path_ = "/tmp/gsa-" + name.substr(0, 24) + "-" + std::to_string(::getpid()) + "-" +
          std::to_string(counter++);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

int TimeScale() {
  static const int scale = [] {
    const char* text = std::getenv("GSHARE_TEST_TIME_SCALE");
    const int value = text != nullptr ? std::atoi(text) : 1;
    return value > 0 ? value : 1;
  }();
  return scale;
}

std::chrono::milliseconds Scaled(std::chrono::milliseconds safety_net) {
  return safety_net * TimeScale();
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_file,
            const std::string& err_file, const std::vector<std::string>& env) {
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  for (const auto& kv : env) {
    const std::string key = kv.substr(0, kv.find('=') + 1);
    std::erase_if(envs, [&](const std::string& s) { return s.rfind(key, 0) == 0; });
    envs.push_back(kv);
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (!out_file.empty()) {
    const int fd = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::dup2(fd, 1);
  }
  if (!err_file.empty()) {
    const int fd = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) ::dup2(fd, 2);
  }
  ::execve(cargv[0], cargv.data(), cenv.data());
  ::_exit(127);
}

int WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) {
      // Under TSan a signal handled inside the intercepted call can surface as EINTR even with
      // WNOHANG (FaultTest.DeviceOutOfMemoryDuringSwapIn gave up on a live worker): retry.
      if (errno == EINTR) continue;
      std::fprintf(stderr, "WaitFor(%d): waitpid: %s\n", static_cast<int>(pid), std::strerror(errno));
      return -1;
    }
    if (std::chrono::steady_clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int ExitCode(int wait_status) {
  if (wait_status == -1) return -1000;
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return -1 - WTERMSIG(wait_status);
  return -999;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json LastJsonLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::string last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return nlohmann::json::parse(last, nullptr, false);
}

bool WaitForFile(const std::string& path, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  struct stat st{};
  while (::stat(path.c_str(), &st) != 0) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

int FreeTcpPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  return ok ? ntohs(a.sin_port) : -1;
}

ToolResult RunTool(const TempDir& dir, const std::vector<std::string>& argv,
                   const std::vector<std::string>& env, std::chrono::milliseconds timeout) {
  static std::atomic<int> counter{0};
  const std::string base = dir / ("tool" + std::to_string(counter++));
  ToolResult r;
  const pid_t pid = Spawn(argv, base + ".out", base + ".err", env);
  if (pid <= 0) return r;
  r.code = ExitCode(WaitFor(pid, timeout));
  r.out = ReadFile(base + ".out");
  r.err = ReadFile(base + ".err");
  return r;
}

ArbiterProcess::ArbiterProcess(const TempDir& dir, std::vector<std::string> extra_args)
    : args_(std::move(extra_args)),
      socket_(dir / "arbiter.sock"),
      events_(dir / "events"),
      summary_(dir / "summary.json"),
      log_(dir / "arbiter.log") {}

ArbiterProcess::~ArbiterProcess() {
  if (pid_ > 0) Kill();
}

bool ArbiterProcess::Start() {
  // GSHARE_TEST_ARBITER_BIN runs the suite against another build of the daemon (e.g. an older
  // commit's, to measure what a fix changed: docs/security.md "Hostile tenants").
  const char* other = std::getenv("GSHARE_TEST_ARBITER_BIN");
  const std::string bin = other != nullptr && *other != '\0' ? other : ARBITER_BIN;
  std::vector<std::string> argv = {bin, "--socket", socket_, "--event-ring",
                                   events_ + std::to_string(starts_++), "--summary", summary_,
                                   "--log-level", "debug"};
  argv.insert(argv.end(), args_.begin(), args_.end());
  ::unlink(socket_.c_str());
  const size_t log_before = ReadFile(log_).size();
  pid_ = Spawn(argv, "", log_, env);
  if (pid_ <= 0) return false;
  // Ready once it logged that it listens (the socket file alone may precede listen()).
  const auto end = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(20));
  while (ReadFile(log_).find("listening on", log_before) == std::string::npos) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    if (std::chrono::steady_clock::now() > end) {
      Kill();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

nlohmann::json ArbiterProcess::Stop() {
  if (pid_ <= 0) return nullptr;
  ::kill(pid_, SIGTERM);
  const int status = WaitFor(pid_, Scaled(std::chrono::seconds(30)));
  pid_ = -1;
  if (ExitCode(status) != 0) return nullptr;
  return nlohmann::json::parse(ReadFile(summary_), nullptr, false);
}

void ArbiterProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  (void)WaitFor(pid_, Scaled(std::chrono::seconds(30)));
  pid_ = -1;
}

}  // namespace gshare::arbiter::testing
