// The registry file's layout, shared by registry.cc (devices, process slots, timelines) and
// registry_mps.cc (the MPS client tables). Only those two files include it; everything else goes
// through Registry (registry.h). A change of layout bumps kRegistryVersion: a process that finds
// another version refuses the registry with a clear error.
#ifndef SIMCUDA_SRC_REGISTRY_LAYOUT_H_
#define SIMCUDA_SRC_REGISTRY_LAYOUT_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "registry.h"

namespace simcuda {

inline constexpr uint64_t kRegistryMagic = 0x3147455253554353ull;  // "SCUSREG1"
// 2: the MPS client tables (SharedMpsDevice) after the process slots.
inline constexpr uint32_t kRegistryVersion = 2;

enum SlotState : uint32_t { kFree = 0, kClaiming = 1, kLive = 2, kReclaiming = 3 };

struct alignas(64) SharedDevice {
  uint64_t capacity;  // written once by the creator before magic is published
  std::atomic<uint64_t> used;
  std::atomic<uint64_t> busy_until[kTimelineCount];
  uint64_t reserved[3];
};

struct alignas(64) SharedProcess {
  std::atomic<uint32_t> state;
  std::atomic<int32_t> pid;           // in the owner's own pid namespace (logs, socket names)
  std::atomic<uint64_t> start_time;
  std::atomic<uint64_t> pid_ns;       // inode of the owner's pid namespace
  uint64_t reserved[5];
  std::atomic<uint64_t> used[kMaxDevices];
};

// One MPS client context on a device. Written by its owner while kLive (demand, at every
// kernel start and end), freed by the owner or by a reclaimer that saw its lock gone.
struct alignas(64) SharedMpsClient {
  std::atomic<uint32_t> state;      // SlotState
  std::atomic<uint32_t> uid;
  std::atomic<int32_t> pid;         // in the owner's pid namespace (logs)
  std::atomic<uint32_t> share_pct;  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, 1..100
  std::atomic<uint64_t> fault_gen;  // the device's fault generation when it attached
  std::atomic<uint64_t> context_bytes;
  // The running kernel's demand: SM fraction d in the low 32 bits, bandwidth fraction b in the
  // high 32 bits, both in millionths; 0 = no kernel running.
  std::atomic<uint64_t> demand;
  uint64_t reserved[3];
};

// The MPS state of one device.
struct alignas(64) SharedMpsDevice {
  std::atomic<uint64_t> fault_gen;  // grows by one at every fatal fault of a client
  std::atomic<uint32_t> faulted;    // 1 from a fault until the last client of the device left
  uint32_t pad;
  std::atomic<uint64_t> busy_until;  // the simulated end of the MPS kernels running (max-CAS)
  uint64_t reserved[5];
  SharedMpsClient clients[kMaxMpsClients];
};

struct Registry::Shared {
  std::atomic<uint64_t> magic;  // published (release) after everything else is initialised
  uint32_t version;
  uint32_t device_count;
  double time_scale;  // the creator's SIMCUDA_TIME_SCALE: one simulated clock for all
  uint64_t reserved[5];
  SharedDevice devices[kMaxDevices];
  SharedProcess processes[kMaxProcesses];
  SharedMpsDevice mps[kMaxDevices];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(SharedDevice) == 64);
static_assert(sizeof(SharedProcess) == 192);
static_assert(sizeof(SharedMpsClient) == 64);
static_assert(sizeof(SharedMpsDevice) == 64 + 64 * kMaxMpsClients);
static_assert(offsetof(Registry::Shared, devices) == 64);
static_assert(offsetof(Registry::Shared, processes) == 64 + 64 * kMaxDevices);
static_assert(offsetof(Registry::Shared, mps) == 64 + 64 * kMaxDevices + 192 * kMaxProcesses);
static_assert(sizeof(Registry::Shared) ==
              64 + 64 * kMaxDevices + 192 * kMaxProcesses + sizeof(SharedMpsDevice) * kMaxDevices);

// Liveness locks live past the end of the file (a lock may cover any offset): one byte per
// process slot, then one per MPS client slot (device-major).
inline constexpr off_t kSlotLockBase = sizeof(Registry::Shared);
inline constexpr off_t kMpsLockBase = kSlotLockBase + kMaxProcesses;

}  // namespace simcuda

#endif  // SIMCUDA_SRC_REGISTRY_LAYOUT_H_
