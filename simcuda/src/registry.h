// The device registry: one shared file per set of simulated GPUs (`<dir>/<name>`; the default
// dir /dev/shm makes it a POSIX shared-memory segment), shared by every process that maps it,
// whatever its pid or ipc namespace. It accounts device memory across processes and holds each
// device's simulated timelines (compute, host->device link, device->host link).
//
// Layout (static_asserts in registry.cc): a header, kMaxDevices SharedDevice records and
// kMaxProcesses SharedProcess slots. Invariants:
//  1. SharedDevice::used == sum over live slots of SharedProcess::used[dev], except for a
//     reservation in flight (added to the device first, then to the slot) — a process killed
//     in that window leaks that one reservation.
//  2. A slot's used[] counters are written only by its owner while state == kLive, and by the
//     one process that moved state from kLive to kReclaiming after seeing the owner dead.
//     An owner is alive while it holds an open-file-description lock on byte
//     kSlotLockBase + slot of the registry file, through a description of its own that is never
//     mapped nor kept by a forked child (taken before the slot is published kLive, dropped after
//     it is freed): the kernel drops it when the process dies, and it means the
//     same in every pid namespace (a pid does not; pid reuse cannot fool it either).
//  3. busy_until[t] only grows; a launch reserves [max(earliest, busy_until), +duration) with a
//     CAS, so no lock exists that a dead process could hold.
//  4. MPS client slots (registry_mps.cc, docs/simcuda.md "MPS mode"), kMaxMpsClients per device,
//     follow invariant 2 with a lock byte of their own; a slot's demand is written only by its
//     owner, and the co-running rate of every kernel is computed from the live slots' demands.
// Thread-safety: all methods are thread-safe and process-safe.
#ifndef SIMCUDA_SRC_REGISTRY_H_
#define SIMCUDA_SRC_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <sys/types.h>
#include <string>
#include <vector>

namespace simcuda {

inline constexpr int kMaxDevices = 16;
inline constexpr int kMaxProcesses = 1024;
inline constexpr int kMaxMpsClients = 64;  // the most MPS client contexts a device can hold

enum class MpsAttachResult { kOk, kMaxClients, kNotReady };

enum Timeline : int { kComputeTimeline = 0, kHostToDeviceTimeline = 1, kDeviceToHostTimeline = 2,
                      kTimelineCount = 3 };

struct SimInterval {
  uint64_t start_ns;
  uint64_t end_ns;
};

class Registry {
 public:
  // Opens (creating if needed, mode 0600) the registry `name` ("/..."; the file `dir` + name),
  // reclaims the slots of dead processes and claims a slot for this process. When this process
  // creates the registry, or finds no other process attached, the devices get `capacities`
  // bytes and the simulated clock runs at `time_scale`; otherwise the values in use win. A file
  // owned by another uid is refused (unless this process is root).
  // Returns nullptr and sets `error` on failure.
  static std::unique_ptr<Registry> Open(const std::string& name,
                                        const std::vector<uint64_t>& capacities, double time_scale,
                                        std::string* error, const std::string& dir = "/dev/shm");
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  int device_count() const;
  double time_scale() const;
  uint64_t Capacity(int dev) const;
  uint64_t Used(int dev) const;
  // Bytes this process holds on `dev`.
  uint64_t UsedByThisProcess(int dev) const;

  // Atomically reserves `bytes` on `dev`; on shortage reclaims dead processes' memory and tries
  // once more. False = out of memory (nothing reserved).
  bool Reserve(int dev, uint64_t bytes);
  // True once Detach ran (the process is exiting): Reserve then always fails, and the driver's
  // allocation entry points answer CUDA_ERROR_DEINITIALIZED, as a real driver after teardown.
  bool detached() const { return detached_.load(std::memory_order_acquire); }
  // Returns a reservation made by Reserve. REQUIRES: bytes were reserved by this process.
  void Release(int dev, uint64_t bytes);
  // Frees the slots (and memory) of processes that are gone; returns how many.
  int ReclaimDead();

  // Reserves `duration_ns` of simulated time on a device timeline, starting no earlier than
  // `earliest_ns`.
  SimInterval ReserveInterval(int dev, Timeline timeline, uint64_t earliest_ns, uint64_t duration_ns);

  // The simulated time up to which `timeline` of `dev` is reserved.
  uint64_t BusyUntil(int dev, Timeline timeline) const;

  // --- MPS mode (registry_mps.cc) ---
  // The per-process cap on device memory of `dev` (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT); 0 = none.
  // Reserve fails beyond it; context memory (ReserveContextMemory) does not count.
  void SetMemoryLimit(int dev, uint64_t bytes);
  // Reserves / releases an MPS client context's memory: device capacity, not the process's cap.
  bool ReserveContextMemory(int dev, uint64_t bytes);
  void ReleaseContextMemory(int dev, uint64_t bytes);
  // Claims an MPS client slot on `dev` for a context with compute share `share_pct`: kNotReady
  // while the device's server is recovering from a fatal fault (clients of it are still alive),
  // kMaxClients when `max_clients` client contexts are live. Reclaims dead clients' slots first.
  MpsAttachResult MpsAttach(int dev, unsigned share_pct, int max_clients, uint64_t context_bytes,
                            int* slot);
  // Frees a slot claimed by MpsAttach.
  void MpsDetach(int dev, int slot);
  // Publishes the demand of the kernel the slot runs (SM fraction, bandwidth fraction, both in
  // (0, 1]); sm_fraction 0 = no kernel running.
  void MpsSetDemand(int dev, int slot, double sm_fraction, double bandwidth_fraction);
  // The rate (work per simulated ns, 1 = as fast as alone at 100%) of slot's running kernel
  // under the co-running model (docs/simcuda.md "MPS mode").
  double MpsRate(int dev, int slot);
  // A fatal fault of a client of `dev`: every client attached before it sees MpsFaulted, and
  // MpsAttach answers kNotReady until all of them have gone.
  void MpsRaiseFault(int dev);
  bool MpsFaulted(int dev, int slot) const;
  // Extends the MPS kernels' hold on the compute timeline to `until_ns` (it only grows).
  void MpsExtendBusy(int dev, uint64_t until_ns);
  uint64_t MpsBusyUntil(int dev) const;
  // Frees the MPS slots of dead owners on `dev`; returns how many.
  int MpsReclaimDead(int dev);
  // The registry file's path.
  const std::string& path() const { return path_; }

  // The devices this process sees, as registry devices in the order it numbers them: an MPS
  // client sees only the devices its daemon serves (the daemon's CUDA_VISIBLE_DEVICES),
  // renumbered from 0, as NVIDIA's MPS server remaps them (docs/simcuda.md "MPS mode"). Every
  // method above that takes a device takes this process's ordinal. Empty (the default): every
  // registry device, as the registry numbers them. Set once at cuInit, before any other use.
  void SetVisibleDevices(std::vector<int> registry_devices);
  bool devices_remapped() const { return !visible_.empty(); }  // SetVisibleDevices was called
  // The registry device of this process's ordinal `dev`.
  int RegistryDevice(int dev) const {
    return visible_.empty() ? dev : visible_[static_cast<size_t>(dev)];
  }

  // In a forked child, from the atfork handler (async-signal-safe: one close): drops the
  // inherited descriptor, so the parent's liveness lock dies with the parent.
  void ForgetParentAfterFork();
  // Re-claims a fresh slot after fork() (the child must not share its parent's slot).
  void ReattachAfterFork();
  // Returns everything this process holds and frees its slot (at normal process exit); later
  // Reserve calls fail and Release calls do nothing. No-op in a forked child that has not
  // re-attached.
  void Detach();

  struct Shared;

 private:
  Registry() = default;
  bool ClaimSlot();
  // True if no process holds a slot.
  bool Idle() const;
  // True unless slot `i`'s owner is known to be dead (no lock held on its byte).
  bool SlotOwnerAlive(int i) const;
  bool LockSlot(int i, short type) const;
  // The methods' bodies, on registry devices (`rdev`: RegistryDevice already applied).
  bool ReserveBytes(int rdev, uint64_t bytes, bool capped);
  void ReleaseBytes(int rdev, uint64_t bytes);
  int MpsReclaimDeadAt(int rdev);
  void MpsDetachAt(int rdev, int slot);
  bool LockByte(off_t at, short type) const;
  // True unless the lock on byte `at` is known to be free (its owner is dead).
  bool ByteLocked(off_t at) const;

  Shared* shared_ = nullptr;
  std::string path_;  // the registry file
  int fd_ = -1;       // this process's own, unmapped description of it (liveness locks)
  int slot_ = -1;
  int owner_pid_ = 0;  // the process that claimed slot_ (a forked child must not detach it)
  std::atomic<bool> detached_{false};
  std::vector<int> visible_;  // SetVisibleDevices
  std::atomic<uint64_t> limit_[kMaxDevices] = {};    // SetMemoryLimit, by registry device
  std::atomic<uint64_t> exempt_[kMaxDevices] = {};   // context memory in UsedByThisProcess
};

// The start time of process `pid` (clock ticks since boot, /proc/<pid>/stat field 22), or 0 if
// it does not exist or is a zombie. StartTimeOf reads it from `stat_path` (/proc/self/stat: this
// process, whichever pid namespace its /proc belongs to).
uint64_t ProcessStartTime(int pid);
uint64_t StartTimeOf(const char* stat_path);

// The inode of the pid namespace `ns_link` names (/proc/self/ns/pid, /proc/<pid>/ns/pid), the
// same number in every namespace; 0 if it cannot be read.
uint64_t PidNamespaceOf(const char* ns_link);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_REGISTRY_H_
