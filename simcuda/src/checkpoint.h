// The process checkpoint API across processes. A process that called cuInit serves an
// abstract Unix socket "\0simcuda-ckpt-<pid>-<start time>" (SOCK_SEQPACKET) from a thread; the
// cuCheckpointProcess* calls of another process (same uid, or root: checked with SO_PEERCRED)
// send one CheckpointRequest per connection and get one CheckpointReply. The caller bounds its
// wait (api_checkpoint.cc) and the service skips requests whose caller has hung up.
//
// States (CUprocessState): RUNNING -Lock-> LOCKED -Checkpoint-> CHECKPOINTED -Restore-> LOCKED
// -Unlock-> RUNNING. While not RUNNING, driver calls that allocate or submit work block
// (WaitIfLocked). Lock waits for all submitted work. Checkpoint copies every device allocation
// and every VMM physical allocation into host memory inside the process and releases the device
// capacity (the address ranges stay reserved, PROT_NONE). Restore maps everything back at the
// same addresses, on the devices given by the GPU pairs (UUID old -> new), moving the accounting.
#ifndef SIMCUDA_SRC_CHECKPOINT_H_
#define SIMCUDA_SRC_CHECKPOINT_H_

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

// The abstract socket name (without the leading NUL) of process `pid`, or "" if it is gone.
std::string CheckpointSocketName(int pid);

// In-process halves of Checkpoint / Restore (checkpoint_memory.cc). REQUIRES: the process is
// locked (no work in flight). Return CUDA_SUCCESS or the reason for failure.
CUresult CheckpointDeviceMemory();
CUresult RestoreDeviceMemory(const std::vector<int>& device_map);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_CHECKPOINT_H_
