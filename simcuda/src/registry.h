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
// Thread-safety: all methods are thread-safe and process-safe.
#ifndef SIMCUDA_SRC_REGISTRY_H_
#define SIMCUDA_SRC_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace simcuda {

inline constexpr int kMaxDevices = 16;
inline constexpr int kMaxProcesses = 1024;

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

  Shared* shared_ = nullptr;
  std::string path_;  // the registry file
  int fd_ = -1;       // this process's own, unmapped description of it (liveness locks)
  int slot_ = -1;
  int owner_pid_ = 0;  // the process that claimed slot_ (a forked child must not detach it)
  std::atomic<bool> detached_{false};
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
