// MpsDaemons (mps_daemons.h): spawning, reaping, restarting and quitting the co-run GPUs'
// private MPS control daemons.
#include "mps_daemons.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <sstream>

#include <spdlog/spdlog.h>

extern char** environ;

namespace gshare::arbiter {
namespace {

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

int64_t NowMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// mkdir -p for one more level; an existing directory is fine.
bool MakeDir(const std::string& path, mode_t mode, std::string* error) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return true;
    *error = path + " exists and is not a directory";
    return false;
  }
  *error = "cannot create " + path + ": " + std::strerror(errno);
  return false;
}

std::string ExitText(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return "exited with status " + std::to_string(info.si_status);
  return std::string("killed by signal ") + ::strsignal(info.si_status);
}

// Spawns `args` with one GPU's MPS environment (its pipe and log directories, the GPU alone
// visible); stdin from `stdin_fd` (-1: /dev/null), stdout and stderr to `stdout_fd` (-1: the
// log directory's output.log). Returns the child's pid (0 and *error on failure).
pid_t SpawnWithMpsEnv(const std::vector<std::string>& args, const std::string& pipe_dir,
                      const std::string& log_dir, DeviceOrdinal ordinal, int stdin_fd, int stdout_fd,
                      std::string* error) {
  // The MPS variables replace any the arbiter inherited; everything else (SIMCUDA_*, PATH)
  // passes through.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    if (kv.rfind("CUDA_MPS_", 0) == 0 || kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) continue;
    env.push_back(kv);
  }
  env.push_back("CUDA_MPS_PIPE_DIRECTORY=" + pipe_dir);
  env.push_back("CUDA_MPS_LOG_DIRECTORY=" + log_dir);
  env.push_back("CUDA_VISIBLE_DEVICES=" + std::to_string(ordinal.value()));
  std::vector<char*> envp, argv;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> a = args;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&attr);
  // The arbiter blocks the signals it reads through its signalfd: the child must not inherit
  // that mask (nor ignored dispositions), or it could not be stopped.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
  ::posix_spawnattr_setpgroup(&attr, 0);  // a terminal's ^C reaches the arbiter, not it
  if (stdin_fd >= 0) {
    ::posix_spawn_file_actions_adddup2(&fa, stdin_fd, STDIN_FILENO);
  } else {
    ::posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  // Its own output goes to its log directory, never to the arbiter's (a daemon outliving a
  // killed arbiter must not hold the arbiter's output open).
  const std::string out = log_dir + "/output.log";
  if (stdout_fd >= 0) {
    ::posix_spawn_file_actions_adddup2(&fa, stdout_fd, STDOUT_FILENO);
  } else {
    ::posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out.c_str(),
                                       O_WRONLY | O_CREAT | O_APPEND, 0640);
  }
  ::posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    *error = "mps_control: cannot start '" + args[0] + "': " + std::strerror(rc);
    return 0;
  }
  return pid;
}

}  // namespace

shm::Status MpsDaemons::Start(const std::string& program, const std::string& root,
                              const std::vector<Gpu>& gpus) {
  program_ = program;
  std::string error;
  if (!MakeDir(root, 0755, &error))
    return shm::Status(shm::StatusCode::kInvalidArgument, "mps_dir: " + error);
  for (const Gpu& g : gpus) {
    Daemon d;
    d.gpu = g;
    const std::string dir = root + "/gpu" + std::to_string(g.ordinal.value());
    d.pipe_dir = dir + "/pipe";
    d.log_dir = dir + "/log";
    // Clients connect through the pipe directory (tenants: 0755, the daemon's sockets decide);
    // the log is the operator's.
    if (!MakeDir(dir, 0755, &error) || !MakeDir(d.pipe_dir, 0755, &error) ||
        !MakeDir(d.log_dir, 0750, &error))
      return shm::Status(shm::StatusCode::kInvalidArgument, "mps_dir: " + error);
    daemons_.push_back(std::move(d));
  }
  for (Daemon& d : daemons_)
    if (auto s = StartOne(d, /*quit_stale=*/true); !s.ok()) return s;
  return shm::Status::Ok();
}

bool MpsDaemons::SendQuit(const Daemon& d, int wait_ms) const {
  std::string out;
  return Control{program_, d.pipe_dir, d.log_dir, d.gpu.ordinal}.Run("quit", wait_ms, &out).ok();
}

shm::Status MpsDaemons::Control::Run(const std::string& command, int wait_ms,
                                     std::string* out) const {
  out->clear();
  const std::string what = "MPS control '" + command + "' for GPU " + std::to_string(ordinal.value());
  int in[2], res[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return shm::Status::FromErrno(what + ": pipe", errno);
  if (::pipe2(res, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(in[0]);
    ::close(in[1]);
    return shm::Status::FromErrno(what + ": pipe", err);
  }
  shm::UniqueFd in_w(in[1]), res_r(res[0]);
  std::string error;
  const pid_t child = SpawnWithMpsEnv({program}, pipe_dir, log_dir, ordinal, in[0], res[1], &error);
  ::close(in[0]);
  ::close(res[1]);
  if (child == 0) return shm::Status(shm::StatusCode::kUnavailable, what + ": " + error);
  const std::string line = command + "\n";
  (void)!::write(in_w.get(), line.data(), line.size());  // SIGPIPE: ignored by the arbiter
  in_w.Reset();
  // Its output until it closes it, bounded: a client that cannot reach the daemon must not
  // hold the caller.
  const auto deadline = NowMs() + wait_ms;
  bool timed_out = false;
  for (;;) {
    const int64_t left = deadline - NowMs();
    pollfd p{res_r.get(), POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) {
      timed_out = true;
      break;
    }
    char buf[512];
    const ssize_t n = ::read(res_r.get(), buf, sizeof buf);
    if (n <= 0) break;
    if (out->size() < 65536) out->append(buf, static_cast<size_t>(n));
  }
  if (timed_out) ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (timed_out)
    return shm::Status(shm::StatusCode::kTimeout,
                       what + ": no answer within " + std::to_string(wait_ms) + " ms");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                              : std::string("killed by a signal");
    return shm::Status(shm::StatusCode::kUnavailable,
                       what + " failed (" + how + ")" + (out->empty() ? "" : ": " + *out));
  }
  if (out->rfind("ERROR", 0) == 0)
    return shm::Status(shm::StatusCode::kUnavailable, what + ": " + *out);
  return shm::Status::Ok();
}

shm::Result<long> MpsDaemons::Control::ServerOf(pid_t pid, int wait_ms) const {
  std::string servers;
  if (auto s = Run("get_server_list", wait_ms, &servers); !s.ok()) return s;
  std::istringstream server_lines(servers);
  for (long server = 0; server_lines >> server;) {
    std::string clients;
    if (auto s = Run("get_client_list " + std::to_string(server), wait_ms, &clients); !s.ok())
      return s;
    std::istringstream client_lines(clients);
    for (long client = 0; client_lines >> client;)
      if (client == pid) return server;
  }
  return 0L;
}

shm::Status MpsDaemons::Control::TerminateClient(pid_t pid, int wait_ms) const {
  auto server = ServerOf(pid, wait_ms);
  if (!server.ok()) return server.status();
  if (*server == 0)
    return shm::Status(shm::StatusCode::kInvalidArgument,
                       "no MPS server of GPU " + std::to_string(ordinal.value()) +
                           "'s daemon serves pid " + std::to_string(pid));
  std::string reply;
  return Run("terminate_client " + std::to_string(*server) + " " + std::to_string(pid), wait_ms,
             &reply);
}

std::optional<MpsDaemons::Control> MpsDaemons::ControlFor(GpuIndex g) const {
  const Daemon* d = Find(g);
  if (d == nullptr) return std::nullopt;
  return Control{program_, d->pipe_dir, d->log_dir, d->gpu.ordinal};
}

shm::Status MpsDaemons::StartOne(Daemon& d, bool quit_stale) {
  // At the first start, a daemon still serving this pipe directory (left by an arbiter that was
  // killed) is asked to quit first: the new one would refuse to start beside it. A restart on
  // the loop does not ask (it could wait seconds): the daemon it replaces was this arbiter's
  // own and has been reaped.
  if (quit_stale && SendQuit(d, kStaleQuitWaitMs))
    spdlog::warn("GPU {}: a previous MPS control daemon served {}; it was asked to quit",
                 d.gpu.ordinal, d.pipe_dir);
  std::string error;
  const pid_t pid =
      SpawnWithMpsEnv({program_, "-f"}, d.pipe_dir, d.log_dir, d.gpu.ordinal, -1, -1, &error);
  if (pid == 0) return shm::Status(shm::StatusCode::kUnavailable, error);
  const int fd = PidfdOpen(pid);
  if (fd < 0) {
    const int err = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return shm::Status::FromErrno("pidfd_open of the MPS daemon", err);
  }
  d.pid = pid;
  d.pidfd.Reset(fd);
  d.restart_at_ns = 0;
  spdlog::info("GPU {}: MPS control daemon started (pid {}, pipe directory {})", d.gpu.ordinal,
               pid, d.pipe_dir);
  return shm::Status::Ok();
}

MpsDaemons::Daemon* MpsDaemons::Find(GpuIndex g) {
  for (Daemon& d : daemons_)
    if (d.gpu.index == g) return &d;
  return nullptr;
}

const MpsDaemons::Daemon* MpsDaemons::Find(GpuIndex g) const {
  for (const Daemon& d : daemons_)
    if (d.gpu.index == g) return &d;
  return nullptr;
}

int MpsDaemons::pidfd(GpuIndex g) const {
  const Daemon* d = Find(g);
  return d != nullptr && d->pid != 0 ? d->pidfd.get() : -1;
}

bool MpsDaemons::Running(GpuIndex g) const {
  const Daemon* d = Find(g);
  return d != nullptr && d->pid != 0;
}

void MpsDaemons::OnExit(GpuIndex g, uint64_t now_ns) {
  Daemon* d = Find(g);
  if (d == nullptr || d->pid == 0) return;
  siginfo_t info{};
  if (::waitid(P_PIDFD, static_cast<id_t>(d->pidfd.get()), &info, WEXITED | WNOHANG) != 0 ||
      info.si_pid == 0)
    return;  // not exited after all (a spurious wake-up)
  spdlog::error("GPU {}: MPS control daemon (pid {}) {}; its clients lose MPS, the GPU runs "
                "exclusive slices; restarting it in {} ms",
                d->gpu.ordinal, d->pid, ExitText(info), d->backoff_ns / 1'000'000);
  d->pid = 0;
  d->pidfd.Reset();
  d->restart_at_ns = now_ns + d->backoff_ns;
  d->backoff_ns = std::min(d->backoff_ns * 2, kMaxBackoffNs);
}

std::vector<GpuIndex> MpsDaemons::RestartDue(uint64_t now_ns) {
  std::vector<GpuIndex> started;
  for (Daemon& d : daemons_) {
    if (d.pid != 0 || d.restart_at_ns == 0 || now_ns < d.restart_at_ns) continue;
    if (auto s = StartOne(d, /*quit_stale=*/false); !s.ok()) {
      spdlog::error("GPU {}: {}", d.gpu.ordinal, s.ToString());
      d.restart_at_ns = now_ns + d.backoff_ns;
      d.backoff_ns = std::min(d.backoff_ns * 2, kMaxBackoffNs);
      continue;
    }
    ++d.restarts;
    started.push_back(d.gpu.index);
  }
  return started;
}

uint64_t MpsDaemons::NextRestartNs() const {
  uint64_t at = UINT64_MAX;
  for (const Daemon& d : daemons_)
    if (d.pid == 0 && d.restart_at_ns != 0) at = std::min(at, d.restart_at_ns);
  return at;
}

std::string MpsDaemons::PipeDir(GpuIndex g) const {
  const Daemon* d = Find(g);
  return d != nullptr ? d->pipe_dir : std::string();
}

nlohmann::json MpsDaemons::Json(GpuIndex g) const {
  const Daemon* d = Find(g);
  if (d == nullptr) return nullptr;
  return {{"pid", d->pid}, {"running", d->pid != 0}, {"pipe_dir", d->pipe_dir},
          {"restarts", d->restarts}};
}

void MpsDaemons::Stop(int wait_ms) {
  for (Daemon& d : daemons_) {
    if (d.pid == 0) continue;
    // `quit` through the control program's client mode, as an operator would.
    (void)SendQuit(d, wait_ms);
    pollfd p{d.pidfd.get(), POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) {
      spdlog::warn("GPU {}: MPS control daemon (pid {}) did not quit in {} ms: killing it",
                   d.gpu.ordinal, d.pid, wait_ms);
      ::syscall(SYS_pidfd_send_signal, d.pidfd.get(), SIGKILL, nullptr, 0);
    }
    siginfo_t info{};
    ::waitid(P_PIDFD, static_cast<id_t>(d.pidfd.get()), &info, WEXITED);
    spdlog::info("GPU {}: MPS control daemon (pid {}) stopped", d.gpu.ordinal, d.pid);
    d.pid = 0;
    d.pidfd.Reset();
    d.restart_at_ns = 0;
  }
}

}  // namespace gshare::arbiter
