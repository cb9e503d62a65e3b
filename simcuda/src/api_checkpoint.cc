// Entry points: the process checkpoint API, called on another process's pid. Each call is one
// request over the target's control socket (see checkpoint.h).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "api.h"
#include "checkpoint.h"

namespace {

CUresult Call(int pid, simcuda::CheckpointOp op, const simcuda::CheckpointRequest* base,
              simcuda::CheckpointReply* reply) {
  if (pid <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::string name = simcuda::CheckpointSocketName(pid);
  if (name.empty()) return CUDA_ERROR_INVALID_VALUE;
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(fd);
    return CUDA_ERROR_INVALID_VALUE;  // not a process using simcuda
  }
  simcuda::CheckpointRequest req{};
  if (base != nullptr) req = *base;
  req.magic = simcuda::kCheckpointMagic;
  req.op = static_cast<uint32_t>(op);
  CUresult result = CUDA_ERROR_OPERATING_SYSTEM;
  if (send(fd, &req, sizeof req, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof req) &&
      recv(fd, reply, sizeof *reply, 0) == static_cast<ssize_t>(sizeof *reply) &&
      reply->magic == simcuda::kCheckpointMagic) {
    result = static_cast<CUresult>(reply->result);
  }
  close(fd);
  return result;
}

}  // namespace

extern "C" {

CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs* args) {
  simcuda::CheckpointRequest req{};
  if (args != nullptr) req.timeout_ms = args->timeoutMs;
  simcuda::CheckpointReply reply{};
  return Call(pid, simcuda::CheckpointOp::kLock, &req, &reply);
}

CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs* args) {
  (void)args;
  simcuda::CheckpointReply reply{};
  return Call(pid, simcuda::CheckpointOp::kCheckpoint, nullptr, &reply);
}

CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs* args) {
  simcuda::CheckpointRequest req{};
  if (args != nullptr && args->gpuPairsCount > 0) {
    if (args->gpuPairs == nullptr || args->gpuPairsCount > simcuda::kMaxDevices) return CUDA_ERROR_INVALID_VALUE;
    req.pair_count = args->gpuPairsCount;
    std::memcpy(req.pairs, args->gpuPairs, sizeof(CUcheckpointGpuPair) * args->gpuPairsCount);
  }
  simcuda::CheckpointReply reply{};
  return Call(pid, simcuda::CheckpointOp::kRestore, &req, &reply);
}

CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs* args) {
  (void)args;
  simcuda::CheckpointReply reply{};
  return Call(pid, simcuda::CheckpointOp::kUnlock, nullptr, &reply);
}

CUresult cuCheckpointProcessGetState(int pid, CUprocessState* state) {
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simcuda::CheckpointReply reply{};
  CUresult r = Call(pid, simcuda::CheckpointOp::kGetState, nullptr, &reply);
  if (r == CUDA_SUCCESS) *state = static_cast<CUprocessState>(reply.state);
  return r;
}

CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int* tid) {
  if (tid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simcuda::CheckpointReply reply{};
  CUresult r = Call(pid, simcuda::CheckpointOp::kGetRestoreThreadId, nullptr, &reply);
  if (r == CUDA_SUCCESS) *tid = reply.tid;
  return r;
}

}  // extern "C"
