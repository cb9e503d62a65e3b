// The target side of the process checkpoint API: the control socket's thread, the process
// state and the lock that blocks driver calls (see checkpoint.h). A request whose caller has
// already hung up (its bounded call timed out, e.g. while this process was stopped) is skipped,
// and a Lock whose caller left while it drained is undone.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "checkpoint.h"
#include "context.h"
#include "driver.h"
#include "handle_set.h"
#include "log.h"

namespace simcuda {
namespace {

struct Service {
  std::atomic<int> state{CU_PROCESS_STATE_RUNNING};
  std::mutex mu;
  std::condition_variable cv;  // signalled when state returns to RUNNING
  int listen_fd = -1;
  std::atomic<int> tid{0};
  std::string path;   // the socket file this process bound ("" = none)
  int owner_pid = 0;  // the process that bound it (a forked child must not remove it)
};

Service& Svc() {
  static Service* s = new Service();
  return *s;
}

void SetState(int state) {
  Service& s = Svc();
  std::lock_guard<std::mutex> lock(s.mu);
  s.state.store(state, std::memory_order_release);
  s.cv.notify_all();
}

// Waits for all work submitted in every context, up to `timeout_ms` (0 = forever).
bool DrainAll(uint32_t timeout_ms) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  std::thread([done] {
    for (CUctx_st* ctx : HandleSet<CUctx_st>::Instance().Snapshot()) SynchronizeContext(ctx);
    done->set_value();
  }).detach();
  if (timeout_ms == 0) {
    f.wait();
    return true;
  }
  return f.wait_for(std::chrono::milliseconds(timeout_ms)) == std::future_status::ready;
}

// Fault injection for tests of the callers' failure paths: SIMCUDA_CHECKPOINT_FAILURES=N makes
// this process's first N checkpoint requests fail (CUDA_ERROR_OPERATING_SYSTEM), leaving the
// process locked, so the caller's Unlock resumes it.
bool InjectCheckpointFailure() {
  static const long failures = [] {
    const char* text = std::getenv("SIMCUDA_CHECKPOINT_FAILURES");
    return text != nullptr ? std::strtol(text, nullptr, 10) : 0L;
  }();
  static std::atomic<long> injected{0};
  if (injected.load() >= failures) return false;
  ++injected;
  Log(LogLevel::kWarn, "checkpoint failure injected (SIMCUDA_CHECKPOINT_FAILURES=%ld)", failures);
  return true;
}

// Maps GPU pairs (UUIDs) to a device map old ordinal -> new ordinal.
bool DeviceMap(const CheckpointRequest& req, std::vector<int>* map) {
  DriverState* d = Driver();
  map->resize(d->devices.size());
  for (size_t i = 0; i < map->size(); ++i) (*map)[i] = static_cast<int>(i);
  auto find = [d](const CUuuid& u) {
    for (size_t i = 0; i < d->devices.size(); ++i) {
      if (std::memcmp(d->devices[i].uuid.bytes, u.bytes, sizeof u.bytes) == 0) return static_cast<int>(i);
    }
    return -1;
  };
  for (uint32_t i = 0; i < req.pair_count && i < kMaxDevices; ++i) {
    int from = find(req.pairs[i].oldUuid);
    int to = find(req.pairs[i].newUuid);
    if (from < 0 || to < 0) return false;
    (*map)[static_cast<size_t>(from)] = to;
  }
  return true;
}

CheckpointReply Handle(const CheckpointRequest& req) {
  Service& s = Svc();
  CheckpointReply reply{kCheckpointMagic, CUDA_SUCCESS, 0, 0};
  int state = s.state.load();
  switch (static_cast<CheckpointOp>(req.op)) {
    case CheckpointOp::kLock:
      if (state != CU_PROCESS_STATE_RUNNING) {
        reply.result = CUDA_ERROR_ILLEGAL_STATE;
        break;
      }
      SetState(CU_PROCESS_STATE_LOCKED);
      if (!DrainAll(req.timeout_ms)) {
        SetState(CU_PROCESS_STATE_RUNNING);
        reply.result = CUDA_ERROR_TIMEOUT;
      }
      break;
    case CheckpointOp::kCheckpoint:
      if (state != CU_PROCESS_STATE_LOCKED) {
        reply.result = CUDA_ERROR_ILLEGAL_STATE;
        break;
      }
      if (InjectCheckpointFailure()) {
        reply.result = CUDA_ERROR_OPERATING_SYSTEM;  // still LOCKED: Unlock resumes the process
        break;
      }
      reply.result = CheckpointDeviceMemory();
      SetState(reply.result == CUDA_SUCCESS ? CU_PROCESS_STATE_CHECKPOINTED : CU_PROCESS_STATE_FAILED);
      break;
    case CheckpointOp::kRestore: {
      if (state != CU_PROCESS_STATE_CHECKPOINTED) {
        reply.result = CUDA_ERROR_ILLEGAL_STATE;
        break;
      }
      std::vector<int> map;
      if (!DeviceMap(req, &map)) {
        reply.result = CUDA_ERROR_INVALID_VALUE;
        break;
      }
      reply.result = RestoreDeviceMemory(map);
      SetState(reply.result == CUDA_SUCCESS ? CU_PROCESS_STATE_LOCKED : CU_PROCESS_STATE_CHECKPOINTED);
      break;
    }
    case CheckpointOp::kUnlock:
      if (state != CU_PROCESS_STATE_LOCKED) {
        reply.result = CUDA_ERROR_ILLEGAL_STATE;
        break;
      }
      SetState(CU_PROCESS_STATE_RUNNING);
      break;
    case CheckpointOp::kGetState:
      break;
    case CheckpointOp::kGetRestoreThreadId:
      reply.tid = s.tid.load();
      break;
    default:
      reply.result = CUDA_ERROR_INVALID_VALUE;
  }
  reply.state = s.state.load();
  return reply;
}

// True if the caller closed its end: a bounded cuCheckpointProcess* call that timed out.
bool CallerGone(int conn) {
  pollfd p{conn, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void Serve(int fd) {
  Svc().tid.store(static_cast<int>(syscall(SYS_gettid)));
  while (true) {
    int conn = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      Log(LogLevel::kError, "checkpoint service stopped: %s", std::strerror(errno));
      return;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    CheckpointRequest req{};
    CheckpointReply reply{kCheckpointMagic, CUDA_ERROR_NOT_PERMITTED, Svc().state.load(), 0};
    bool allowed = getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                   (cred.uid == getuid() || cred.uid == 0);
    if (allowed) {
      ssize_t n = recv(conn, &req, sizeof req, 0);
      if (n == static_cast<ssize_t>(sizeof req) && req.magic == kCheckpointMagic) {
        if (CallerGone(conn)) {  // it timed out while this process was stopped: do not act
          Log(LogLevel::kWarn, "checkpoint request %u skipped: its caller gave up waiting", req.op);
          close(conn);
          continue;
        }
        reply = Handle(req);
        if (static_cast<CheckpointOp>(req.op) == CheckpointOp::kLock && reply.result == CUDA_SUCCESS &&
            CallerGone(conn)) {
          SetState(CU_PROCESS_STATE_RUNNING);  // nobody would unlock it
          Log(LogLevel::kWarn, "checkpoint lock undone: its caller gave up waiting");
        }
      } else {
        reply.result = CUDA_ERROR_INVALID_VALUE;
      }
    }
    ssize_t sent = send(conn, &reply, sizeof reply, MSG_NOSIGNAL);
    (void)sent;
    close(conn);
  }
}

}  // namespace

namespace {

// Removes the sockets killed processes of this pid namespace left in `dir` (a name whose pid
// is gone or has another start time). Others' files are left: the directory is shared.
void RemoveStaleSockets(const std::string& dir, uint64_t own_ns) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  const std::string prefix = "simcuda-ckpt-" + std::to_string(own_ns) + "-";
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    int pid = 0;
    unsigned long long start = 0;
    if (std::sscanf(e->d_name + prefix.size(), "%d-%llu", &pid, &start) != 2) continue;
    if (ProcessStartTime(pid) == start) continue;
    if (unlinkat(dirfd(d), e->d_name, 0) == 0) Log(LogLevel::kDebug, "removed stale %s", e->d_name);
  }
  closedir(d);
}

}  // namespace

void StartCheckpointService() {
  Service& s = Svc();
  if (s.listen_fd >= 0) close(s.listen_fd);  // inherited across fork: the child serves its own
  s.listen_fd = -1;
  s.path.clear();
  s.state.store(CU_PROCESS_STATE_RUNNING);
  const std::string dir = CheckpointDir();
  const uint64_t pid_ns = PidNamespaceOf("/proc/self/ns/pid");
  const uint64_t start = StartTimeOf("/proc/self/stat");
  if (pid_ns == 0 || start == 0) {
    Log(LogLevel::kWarn, "checkpoint service unavailable: /proc/self does not name this process");
    return;
  }
  RemoveStaleSockets(dir, pid_ns);
  const std::string name = CheckpointSocketName(pid_ns, static_cast<int>(getpid()), start);
  const int dir_fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  socklen_t len = 0;
  if (dir_fd < 0 || fd < 0 || !SocketAddress(dir_fd, name, &addr, &len)) {
    Log(LogLevel::kWarn, "checkpoint service unavailable: %s: %s", dir.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    if (dir_fd >= 0) close(dir_fd);
    return;
  }
  unlinkat(dir_fd, name.c_str(), 0);  // a file of this very process: left by nothing alive
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 8) != 0) {
    Log(LogLevel::kWarn, "checkpoint service unavailable: %s/%s: %s", dir.c_str(), name.c_str(),
        std::strerror(errno));
    close(fd);
    close(dir_fd);
    return;
  }
  close(dir_fd);
  s.listen_fd = fd;
  s.path = dir + "/" + name;
  s.owner_pid = static_cast<int>(getpid());
  std::thread(Serve, fd).detach();
}

void RemoveCheckpointSocket() {
  Service& s = Svc();
  if (!s.path.empty() && s.owner_pid == static_cast<int>(getpid())) unlink(s.path.c_str());
}

void WaitIfLocked() {
  Service& s = Svc();
  if (s.state.load(std::memory_order_acquire) == CU_PROCESS_STATE_RUNNING) return;
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait(lock, [&] { return s.state.load() == CU_PROCESS_STATE_RUNNING; });
}

}  // namespace simcuda
