// The process checkpoint API across processes, whatever pid namespace each is in. A process
// that called cuInit serves a Unix socket (SOCK_SEQPACKET) from a thread, in its own /dev/shm
// (in a container: the container's private one), named
// "simcuda-ckpt-<pid namespace inode>-<pid in it>-<start time>": the same three values a caller
// reads for the pid it was given (a host pid, as the real driver takes): /proc/PID/ns/pid, the
// last NSpid entry of /proc/PID/status, and /proc/PID/stat. The caller reaches the socket through
// /proc/PID/root/dev/shm, so only a process that can see the target and may inspect it (the
// kernel's ptrace-read check) gets there: another container cannot. It refuses a socket whose
// server (SO_PEERCRED, translated into the caller's pid namespace) is not PID.
// cuCheckpointProcess* calls (same uid, or root: checked with SO_PEERCRED) send one
// CheckpointRequest per connection and get one CheckpointReply. The caller bounds its wait
// (api_checkpoint.cc) and the service skips requests whose caller has hung up.
//
// States (CUprocessState): RUNNING -Lock-> LOCKED -Checkpoint-> CHECKPOINTED -Restore-> LOCKED
// -Unlock-> RUNNING. While not RUNNING, driver calls that allocate or submit work block
// (WaitIfLocked). Lock waits for all submitted work. Checkpoint copies every device allocation
// and every VMM physical allocation into host memory inside the process and releases the device
// capacity (the address ranges stay reserved, PROT_NONE). Restore maps everything back at the
// same addresses, on the devices given by the GPU pairs (UUID old -> new), moving the accounting.
#ifndef SIMCUDA_SRC_CHECKPOINT_H_
#define SIMCUDA_SRC_CHECKPOINT_H_

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "api.h"
#include "registry.h"

namespace simcuda {

inline constexpr uint32_t kCheckpointMagic = 0x434b5031;  // "CKP1"

enum class CheckpointOp : uint32_t { kLock = 1, kCheckpoint = 2, kRestore = 3, kUnlock = 4, kGetState = 5,
                                     kGetRestoreThreadId = 6 };

struct CheckpointRequest {
  uint32_t magic;
  uint32_t op;          // CheckpointOp
  uint32_t timeout_ms;  // kLock: 0 = no timeout
  uint32_t pair_count;  // kRestore: entries used in `pairs`
  CUcheckpointGpuPair pairs[kMaxDevices];
};

struct CheckpointReply {
  uint32_t magic;
  int32_t result;  // CUresult
  int32_t state;   // CUprocessState after the request
  int32_t tid;     // kGetRestoreThreadId
};

static_assert(sizeof(CUcheckpointGpuPair) == 32);
static_assert(sizeof(CheckpointRequest) == 16 + 32 * kMaxDevices);
static_assert(sizeof(CheckpointReply) == 16);

// The checkpoint socket's file name of the process whose pid namespace has inode `pid_ns`, whose
// pid in it is `ns_pid` and whose start time is `start`.
std::string CheckpointSocketName(uint64_t pid_ns, int ns_pid, uint64_t start);
// The file name of the socket process `pid` (a pid in this process's namespace) serves, or ""
// when it is gone or this process may not inspect it.
std::string CheckpointSocketNameOf(int pid);
// The pid `pid` has inside its own pid namespace (the last entry of NSpid in
// /proc/<pid>/status; `pid` itself on kernels without NSpid), or 0 if it is gone.
int InnermostPid(int pid);
// At normal exit: removes this process's checkpoint socket file.
void RemoveCheckpointSocket();
// The directory of a process's checkpoint socket, as that process sees it.
inline constexpr const char* kCheckpointSocketDir = "/dev/shm";
std::string CheckpointDir();
// "/proc/self/fd/<dir_fd>/<name>" in `addr`: a socket path whatever the directory's length
// (sun_path holds 107 bytes). False if even that does not fit.
bool SocketAddress(int dir_fd, const std::string& name, sockaddr_un* addr, socklen_t* len);

// In-process halves of Checkpoint / Restore (checkpoint_memory.cc). REQUIRES: the process is
// locked (no work in flight). Return CUDA_SUCCESS or the reason for failure.
CUresult CheckpointDeviceMemory();
CUresult RestoreDeviceMemory(const std::vector<int>& device_map);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_CHECKPOINT_H_
