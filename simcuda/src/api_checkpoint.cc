// Entry points: the process checkpoint API, called on another process's pid. Each call is one
// request over the target's control socket (see checkpoint.h), bounded in time so that a
// stopped (SIGSTOP, ptrace) or wedged target cannot block the caller: an answer that does not
// come in time is CUDA_ERROR_TIMEOUT, and the target skips the request when it gets to it (the
// caller has hung up; see checkpoint_service.cc).
//   GetState, GetRestoreThreadId, Unlock   the reply bound (1 s; SIMCUDA_CHECKPOINT_REPLY_MS)
//   Lock                                   timeoutMs + the reply bound; timeoutMs 0 = unbounded
//   Checkpoint, Restore                    10 s + twice the time every device's whole capacity
//                                          takes over its link, + the reply bound
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api.h"
#include "checkpoint.h"
#include "driver.h"
#include "log.h"
#include "sim_clock.h"

namespace {

constexpr int64_t kMoveBaseMs = 10000;
constexpr int64_t kUninitializedMoveMs = 120000;  // no device table to size the bound with

// The bound for requests that do no work in the target (SIMCUDA_CHECKPOINT_REPLY_MS, parsed and
// checked with the rest of the configuration: a malformed value fails cuInit).
int64_t ReplyMs() {
  const simcuda::DriverState* d = simcuda::Driver();
  return d != nullptr ? d->config.checkpoint_reply_ms : simcuda::Config{}.checkpoint_reply_ms;
}

// The bound for Checkpoint/Restore: the most device memory a process can hold is every device's
// capacity; moving it takes capacity / link speed of simulated time (real time = x time scale).
int64_t MoveMs() {
  simcuda::DriverState* d = simcuda::Driver();
  if (d == nullptr) return kUninitializedMoveMs;
  double ms = 0;
  for (size_t i = 0; i < d->devices.size(); ++i) {
    const double ns = static_cast<double>(simcuda::TransferNs(
        static_cast<double>(d->registry->Capacity(static_cast<int>(i))), d->devices[i].spec.link_bytes_per_s));
    ms += ns / 1e6 * simcuda::TimeScale();
  }
  return kMoveBaseMs + static_cast<int64_t>(2 * ms) + ReplyMs();
}

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Waits until `fd` is readable or `deadline_ms` (NowMs clock; < 0 = never) passes.
// Returns 1 readable, 0 timed out, -1 error.
int WaitReadable(int fd, int64_t deadline_ms) {
  while (true) {
    int timeout = -1;
    if (deadline_ms >= 0) {
      const int64_t left = deadline_ms - NowMs();
      if (left <= 0) return 0;
      timeout = static_cast<int>(left > 0x7fffffff ? 0x7fffffff : left);
    }
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, timeout);
    if (n > 0) return 1;
    if (n < 0 && errno != EINTR) return -1;
  }
}

// One request over the connected-to-be socket `fd`, to the socket at `addr` that process `pid`
// must serve; see Call.
CUresult Exchange(int fd, const sockaddr_un& addr, socklen_t len, int pid,
                  const simcuda::CheckpointRequest& req, simcuda::CheckpointReply* reply,
                  int64_t bound_ms) {
  const int64_t deadline = bound_ms > 0 ? NowMs() + bound_ms : -1;
  if (bound_ms > 0) {
    // Bounds connect (a stopped target's full backlog) and send.
    timeval tv{static_cast<time_t>(bound_ms / 1000), static_cast<suseconds_t>(bound_ms % 1000 * 1000)};
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) return CUDA_ERROR_OPERATING_SYSTEM;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return CUDA_ERROR_TIMEOUT;  // backlog stayed full
    return CUDA_ERROR_INVALID_VALUE;  // not a process using simcuda
  }
  // The server is the process asked for (its pid as this process's namespace names it), not a
  // file another process put there under its name.
  ucred cred{};
  socklen_t cred_len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 || cred.pid != pid) {
    simcuda::Log(simcuda::LogLevel::kWarn, "checkpoint socket of pid %d is served by pid %d: refused",
                 pid, static_cast<int>(cred.pid));
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (send(fd, &req, sizeof req, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof req)) {
    return errno == EAGAIN || errno == EWOULDBLOCK ? CUDA_ERROR_TIMEOUT : CUDA_ERROR_OPERATING_SYSTEM;
  }
  const int ready = WaitReadable(fd, deadline);
  if (ready == 0) return CUDA_ERROR_TIMEOUT;  // closing the socket tells the target to skip it
  if (ready < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  if (recv(fd, reply, sizeof *reply, MSG_DONTWAIT) != static_cast<ssize_t>(sizeof *reply) ||
      reply->magic != simcuda::kCheckpointMagic) {
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  return static_cast<CUresult>(reply->result);
}

// One request to `pid`, answered within `bound_ms` (0 = no bound) or CUDA_ERROR_TIMEOUT.
CUresult Call(int pid, simcuda::CheckpointOp op, const simcuda::CheckpointRequest* base,
              simcuda::CheckpointReply* reply, int64_t bound_ms) {
  if (pid <= 0) return CUDA_ERROR_INVALID_VALUE;
  const std::string name = simcuda::CheckpointSocketNameOf(pid);
  if (name.empty()) return CUDA_ERROR_INVALID_VALUE;
  // The node-wide directory as the target's mount namespace shows it: the kernel lets this
  // process through only if it may inspect the target.
  const std::string dir = "/proc/" + std::to_string(pid) + "/root" + simcuda::CheckpointDir();
  const int dir_fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return errno == EACCES || errno == EPERM ? CUDA_ERROR_NOT_PERMITTED : CUDA_ERROR_INVALID_VALUE;
  sockaddr_un addr{};
  socklen_t len = 0;
  const bool addressed = simcuda::SocketAddress(dir_fd, name, &addr, &len);
  simcuda::CheckpointRequest req{};
  if (base != nullptr) req = *base;
  req.magic = simcuda::kCheckpointMagic;
  req.op = static_cast<uint32_t>(op);
  const int fd = addressed ? socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0) : -1;
  if (fd < 0) {
    close(dir_fd);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  const CUresult result = Exchange(fd, addr, len, pid, req, reply, bound_ms);
  close(fd);
  close(dir_fd);
  return result;
}

}  // namespace

extern "C" {

CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs* args) {
  simcuda::CheckpointRequest req{};
  if (args != nullptr) req.timeout_ms = args->timeoutMs;
  simcuda::CheckpointReply reply{};
  const int64_t bound = req.timeout_ms == 0 ? 0 : static_cast<int64_t>(req.timeout_ms) + ReplyMs();
  return Call(pid, simcuda::CheckpointOp::kLock, &req, &reply, bound);
}

CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs* args) {
  (void)args;
  simcuda::CheckpointReply reply{};
  return Call(pid, simcuda::CheckpointOp::kCheckpoint, nullptr, &reply, MoveMs());
}

CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs* args) {
  simcuda::CheckpointRequest req{};
  if (args != nullptr && args->gpuPairsCount > 0) {
    if (args->gpuPairs == nullptr || args->gpuPairsCount > simcuda::kMaxDevices) return CUDA_ERROR_INVALID_VALUE;
    req.pair_count = args->gpuPairsCount;
    std::memcpy(req.pairs, args->gpuPairs, sizeof(CUcheckpointGpuPair) * args->gpuPairsCount);
  }
  simcuda::CheckpointReply reply{};
  return Call(pid, simcuda::CheckpointOp::kRestore, &req, &reply, MoveMs());
}

CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs* args) {
  (void)args;
  simcuda::CheckpointReply reply{};
  return Call(pid, simcuda::CheckpointOp::kUnlock, nullptr, &reply, ReplyMs());
}

CUresult cuCheckpointProcessGetState(int pid, CUprocessState* state) {
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simcuda::CheckpointReply reply{};
  CUresult r = Call(pid, simcuda::CheckpointOp::kGetState, nullptr, &reply, ReplyMs());
  if (r == CUDA_SUCCESS) *state = static_cast<CUprocessState>(reply.state);
  return r;
}

CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int* tid) {
  if (tid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simcuda::CheckpointReply reply{};
  CUresult r = Call(pid, simcuda::CheckpointOp::kGetRestoreThreadId, nullptr, &reply, ReplyMs());
  if (r == CUDA_SUCCESS) *tid = reply.tid;
  return r;
}

}  // extern "C"
