// DriverLib: dlopen'ed CUDA driver entry points for discovery and process checkpointing.
#include "driver.h"

#include <dlfcn.h>

#include <cstring>

namespace gshare::arbiter {
namespace {

template <typename Fn>
void Load(void* handle, const char* name, Fn*& out) {
  out = reinterpret_cast<Fn*>(::dlsym(handle, name));
}

}  // namespace

shm::Result<DriverLib> DriverLib::Open(const std::string& path) {
  DriverLib lib;
  lib.handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle_ == nullptr) {
    const char* err = ::dlerror();
    return shm::Status(shm::StatusCode::kUnavailable,
                       "cannot load " + path + ": " + (err != nullptr ? err : "unknown error"));
  }
  CUresult (*init)(unsigned) = nullptr;
  Load(lib.handle_, "cuInit", init);
  Load(lib.handle_, "cuGetErrorName", lib.get_error_name_);
  Load(lib.handle_, "cuDeviceGetCount", lib.device_get_count_);
  Load(lib.handle_, "cuDeviceGet", lib.device_get_);
  Load(lib.handle_, "cuDeviceTotalMem_v2", lib.device_total_mem_);
  Load(lib.handle_, "cuDeviceGetUuid_v2", lib.device_get_uuid_);
  if (lib.device_get_uuid_ == nullptr) Load(lib.handle_, "cuDeviceGetUuid", lib.device_get_uuid_);
  Load(lib.handle_, "cuCheckpointProcessLock", lib.lock_);
  Load(lib.handle_, "cuCheckpointProcessCheckpoint", lib.checkpoint_);
  Load(lib.handle_, "cuCheckpointProcessRestore", lib.restore_);
  Load(lib.handle_, "cuCheckpointProcessUnlock", lib.unlock_);
  Load(lib.handle_, "cuCheckpointProcessGetState", lib.get_state_);
  if (init == nullptr || lib.device_get_count_ == nullptr || lib.device_get_ == nullptr ||
      lib.device_total_mem_ == nullptr) {
    return shm::Status(shm::StatusCode::kUnavailable, path + " lacks the device query API");
  }
  if (auto s = lib.Check(init(0), "cuInit"); !s.ok()) return s;
  return lib;
}

shm::Status DriverLib::Check(CUresult r, const char* what) const {
  if (r == CUDA_SUCCESS) return {};
  const char* name = nullptr;
  if (get_error_name_ == nullptr || get_error_name_(r, &name) != CUDA_SUCCESS || name == nullptr)
    name = "unknown CUresult";
  // A lock that timed out (work still running; the driver's documented answer is NOT_READY,
  // simcuda's TIMEOUT) may succeed later; anything else will not.
  const bool later = r == CUDA_ERROR_TIMEOUT || r == CUDA_ERROR_NOT_READY;
  return shm::Status(later ? shm::StatusCode::kTimeout : shm::StatusCode::kUnavailable,
                     std::string(what) + " failed: " + name + " (" + std::to_string(r) + ")");
}

shm::Result<std::vector<uint64_t>> DriverLib::DeviceMemory() const {
  int count = 0;
  if (auto s = Check(device_get_count_(&count), "cuDeviceGetCount"); !s.ok()) return s;
  std::vector<uint64_t> mem;
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (auto s = Check(device_get_(&dev, i), "cuDeviceGet"); !s.ok()) return s;
    size_t bytes = 0;
    if (auto s = Check(device_total_mem_(&bytes, dev), "cuDeviceTotalMem"); !s.ok()) return s;
    mem.push_back(bytes);
  }
  return mem;
}

shm::Result<std::vector<std::array<uint8_t, 16>>> DriverLib::DeviceUuids() const {
  int count = 0;
  if (auto s = Check(device_get_count_(&count), "cuDeviceGetCount"); !s.ok()) return s;
  std::vector<std::array<uint8_t, 16>> uuids(static_cast<size_t>(count));
  if (device_get_uuid_ == nullptr) return uuids;
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (auto s = Check(device_get_(&dev, i), "cuDeviceGet"); !s.ok()) return s;
    CUuuid u{};
    if (auto s = Check(device_get_uuid_(&u, dev), "cuDeviceGetUuid"); !s.ok()) return s;
    std::memcpy(uuids[static_cast<size_t>(i)].data(), u.bytes, sizeof u.bytes);
  }
  return uuids;
}

shm::Status DriverLib::LockAndCheckpoint(int pid, unsigned timeout_ms) const {
  if (!can_checkpoint())
    return shm::Status(shm::StatusCode::kUnavailable, "the driver has no process checkpoint API");
  CUcheckpointLockArgs lock_args;
  std::memset(&lock_args, 0, sizeof(lock_args));
  lock_args.timeoutMs = timeout_ms;
  if (auto s = Check(lock_(pid, &lock_args), "cuCheckpointProcessLock"); !s.ok()) {
    // A lock that happened but whose answer was lost (simcuda bounds each call: its answer came
    // after the caller stopped waiting, on a loaded node) leaves the process locked with nobody
    // to unlock it, and an earlier call's checkpoint whose answer was lost leaves it frozen:
    // asked again, the lock fails for the state (CUDA_ERROR_ILLEGAL_STATE) for ever, and the
    // function blocks in its next driver call. Go on from where the process is.
    const int state = ProcessState(pid);
    if (state == CU_PROCESS_STATE_CHECKPOINTED) return {};
    if (state != CU_PROCESS_STATE_LOCKED) return s;
  }
  CUcheckpointCheckpointArgs ck_args;
  std::memset(&ck_args, 0, sizeof(ck_args));
  if (auto s = Check(checkpoint_(pid, &ck_args), "cuCheckpointProcessCheckpoint"); !s.ok()) {
    if (ProcessState(pid) == CU_PROCESS_STATE_CHECKPOINTED) return {};  // its answer was lost
    (void)Unlock(pid);
    return s;
  }
  return {};
}

shm::Status DriverLib::RestoreAndUnlock(int pid, DeviceOrdinal from, DeviceOrdinal to) const {
  if (!can_checkpoint())
    return shm::Status(shm::StatusCode::kUnavailable, "the driver has no process checkpoint API");
  CUcheckpointRestoreArgs args;
  std::memset(&args, 0, sizeof(args));
  CUcheckpointGpuPair pair;
  std::memset(&pair, 0, sizeof(pair));
  if (from != to && device_get_uuid_ != nullptr) {
    CUdevice a = 0;
    CUdevice b = 0;
    if (auto s = Check(device_get_(&a, static_cast<int>(from.value())), "cuDeviceGet"); !s.ok()) return s;
    if (auto s = Check(device_get_(&b, static_cast<int>(to.value())), "cuDeviceGet"); !s.ok()) return s;
    if (auto s = Check(device_get_uuid_(&pair.oldUuid, a), "cuDeviceGetUuid"); !s.ok()) return s;
    if (auto s = Check(device_get_uuid_(&pair.newUuid, b), "cuDeviceGetUuid"); !s.ok()) return s;
    args.gpuPairs = &pair;
    args.gpuPairsCount = 1;
  }
  if (auto s = Check(restore_(pid, &args), "cuCheckpointProcessRestore"); !s.ok()) {
    // Restored already, but the answer (of this restore, or of an earlier one whose unlock then
    // failed) was lost: the process is left locked, and every restore after fails for the state
    // while the function waits for its grant. Only the unlock is left to do.
    if (ProcessState(pid) != CU_PROCESS_STATE_LOCKED) return s;
  }
  return Unlock(pid);
}

shm::Status DriverLib::Unlock(int pid) const {
  if (unlock_ == nullptr)
    return shm::Status(shm::StatusCode::kUnavailable, "the driver has no process checkpoint API");
  CUcheckpointUnlockArgs un;
  std::memset(&un, 0, sizeof(un));
  const shm::Status s = Check(unlock_(pid, &un), "cuCheckpointProcessUnlock");
  // An unlock whose answer was lost still ran the process again.
  if (!s.ok() && ProcessState(pid) == CU_PROCESS_STATE_RUNNING) return {};
  return s;
}

int DriverLib::ProcessState(int pid) const {
  if (get_state_ == nullptr) return kNoCudaState;
  CUprocessState st = CU_PROCESS_STATE_RUNNING;
  const CUresult r = get_state_(pid, &st);
  if (r == CUDA_ERROR_TIMEOUT || r == CUDA_ERROR_NOT_READY) return kNoAnswer;
  if (r != CUDA_SUCCESS) return kNoCudaState;
  return static_cast<int>(st);
}

}  // namespace gshare::arbiter
