// DriverLib: the few CUDA driver entry points the arbiter itself calls, loaded with dlopen so
// the daemon runs (and is tested) without a GPU: device discovery (count, memory, UUIDs) and
// the process checkpoint API it uses to enforce on a function that does not yield and to
// deep-evict long-idle ones (cuCheckpointProcessLock/Checkpoint/Restore/Unlock). In tests the
// library is simcuda's libcuda.so.1.
//
// Ownership: owns the dlopen handle (never dlclose'd: a driver must not be unloaded).
// Thread-safety: the driver's entry points are thread-safe; this object is immutable after Open.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_ids.h"
#include "gshare/shm/status.h"

namespace gshare::arbiter {

class DriverLib {
 public:
  // dlopens `path` and calls cuInit(0). kUnavailable with dlerror() or the CUresult's name.
  static shm::Result<DriverLib> Open(const std::string& path);

  // Total memory of every visible device, indexed by ordinal.
  shm::Result<std::vector<uint64_t>> DeviceMemory() const;
  // The UUID of every visible device, indexed by ordinal; all 0 where the driver has no UUID
  // query.
  shm::Result<std::vector<std::array<uint8_t, 16>>> DeviceUuids() const;

  // Whether the checkpoint entry points exist in this driver.
  bool can_checkpoint() const { return lock_ != nullptr && checkpoint_ != nullptr &&
                                       restore_ != nullptr && unlock_ != nullptr; }
  // Locks `pid`'s CUDA API (waiting up to timeout_ms for in-flight work) and checkpoints its
  // device state to host memory, releasing its GPU memory.
  shm::Status LockAndCheckpoint(int pid, unsigned timeout_ms) const;
  // Restores a checkpointed `pid`, moving it from GPU `from` to GPU `to` (gpuPairs when they
  // differ), then unlocks it.
  shm::Status RestoreAndUnlock(int pid, DeviceOrdinal from, DeviceOrdinal to) const;
  // Unlocks a locked (not checkpointed) `pid`.
  shm::Status Unlock(int pid) const;
  // Whether the driver can be asked for a process's state (cuCheckpointProcessGetState).
  bool can_query_state() const { return get_state_ != nullptr; }
  // Process state as the driver sees it (CU_PROCESS_STATE_*), or kNoCudaState (no state API, or
  // the driver knows no CUDA state of the process), or kNoAnswer (the driver could not tell in
  // time: a stopped or wedged process may still hold device memory).
  static constexpr int kNoCudaState = -1;
  static constexpr int kNoAnswer = -2;
  int ProcessState(int pid) const;

 private:
  shm::Status Check(CUresult r, const char* what) const;

  void* handle_ = nullptr;
  CUresult (*get_error_name_)(CUresult, const char**) = nullptr;
  CUresult (*device_get_count_)(int*) = nullptr;
  CUresult (*device_get_)(CUdevice*, int) = nullptr;
  CUresult (*device_total_mem_)(size_t*, CUdevice) = nullptr;
  CUresult (*device_get_uuid_)(CUuuid*, CUdevice) = nullptr;
  CUresult (*lock_)(int, CUcheckpointLockArgs*) = nullptr;
  CUresult (*checkpoint_)(int, CUcheckpointCheckpointArgs*) = nullptr;
  CUresult (*restore_)(int, CUcheckpointRestoreArgs*) = nullptr;
  CUresult (*unlock_)(int, CUcheckpointUnlockArgs*) = nullptr;
  CUresult (*get_state_)(int, CUprocessState*) = nullptr;
};

}  // namespace gshare::arbiter
