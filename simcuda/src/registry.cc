// The shared-memory device registry (see registry.h for the layout's invariants).
#include "registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <utility>

#include "log.h"
#include "registry_layout.h"

namespace simcuda {

uint64_t ProcessStartTime(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  return StartTimeOf(path);
}

uint64_t PidNamespaceOf(const char* ns_link) {
  char target[64];
  const ssize_t n = readlink(ns_link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  // "pid:[4026531836]"
  const char* open_bracket = std::strchr(target, '[');
  return open_bracket == nullptr ? 0 : std::strtoull(open_bracket + 1, nullptr, 10);
}

uint64_t StartTimeOf(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  // After ") " come field 3 (state) ... field 22 (starttime).
  p += 2;
  if (*p == 'Z' || *p == 'X') return 0;
  for (int field = 3; field < 22 && *p != '\0'; ++p) {
    if (*p == ' ') ++field;
  }
  return std::strtoull(p, nullptr, 10);
}

namespace {

void SleepMs(int ms) {
  timespec ts{0, ms * 1000000L};
  nanosleep(&ts, nullptr);
}

}  // namespace

std::unique_ptr<Registry> Registry::Open(const std::string& name,
                                         const std::vector<uint64_t>& capacities, double time_scale,
                                         std::string* error, const std::string& dir) {
  if (capacities.empty() || capacities.size() > kMaxDevices) {
    *error = "bad device count";
    return nullptr;
  }
  const std::string path = dir + (name.front() == '/' ? "" : "/") + name;
  bool creator = false;
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      creator = true;
      if (ftruncate(fd, sizeof(Shared)) != 0) {
        *error = "ftruncate device registry " + path + ": " + std::strerror(errno);
        close(fd);
        unlink(path.c_str());
        return nullptr;
      }
    } else if (errno == EEXIST) {
      fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    }
  }
  if (fd < 0) {
    *error = "cannot open device registry " + path + ": " + std::strerror(errno) +
             (errno == ENOENT ? " (SIMCUDA_DIR must name an existing directory)" : "");
    return nullptr;
  }
  // A creator may still be sizing the segment.
  struct stat st{};
  for (int i = 0; i < 2000; ++i) {
    if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(Shared)) break;
    SleepMs(1);
  }
  if (static_cast<size_t>(st.st_size) < sizeof(Shared)) {
    *error = "device registry " + path + " has the wrong size (another simcuda version?)";
    close(fd);
    return nullptr;
  }
  if (st.st_uid != geteuid() && geteuid() != 0) {
    *error = "device registry " + path + " belongs to uid " + std::to_string(st.st_uid) +
             ", not to this process's uid " + std::to_string(geteuid());
    close(fd);
    return nullptr;
  }
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) {
    *error = "mmap device registry " + path + ": " + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  auto* shared = static_cast<Shared*>(mem);
  if (creator) {
    shared->version = kRegistryVersion;
    shared->device_count = static_cast<uint32_t>(capacities.size());
    shared->time_scale = time_scale;
    for (size_t d = 0; d < capacities.size(); ++d) shared->devices[d].capacity = capacities[d];
    shared->magic.store(kRegistryMagic, std::memory_order_release);
  } else {
    for (int i = 0; i < 2000 && shared->magic.load(std::memory_order_acquire) != kRegistryMagic; ++i) {
      SleepMs(1);
    }
    if (shared->magic.load(std::memory_order_acquire) == kRegistryMagic &&
        shared->version != kRegistryVersion) {
      *error = "device registry " + path + " has layout version " + std::to_string(shared->version) +
               ", this simcuda uses " + std::to_string(kRegistryVersion) +
               " (a process of another simcuda build uses it; use another SIMCUDA_REGISTRY)";
      munmap(mem, sizeof(Shared));
      close(fd);
      return nullptr;
    }
    if (shared->magic.load(std::memory_order_acquire) != kRegistryMagic) {
      *error = "device registry " + path + " is not initialised or has another version";
      munmap(mem, sizeof(Shared));
      close(fd);
      return nullptr;
    }
  }
  // Liveness locks go on a description of their own that nothing maps: a mapping holds its
  // description, and a forked child inherits the mapping, so a lock on the mapped one would
  // outlive a killed parent for as long as any child it forked.
  const int lock_fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  struct stat lock_st{};
  if (lock_fd < 0 || fstat(lock_fd, &lock_st) != 0 || lock_st.st_ino != st.st_ino || lock_st.st_dev != st.st_dev) {
    *error = "device registry " + path + " was replaced while it was opened";
    if (lock_fd >= 0) close(lock_fd);
    munmap(mem, sizeof(Shared));
    close(fd);
    return nullptr;
  }
  close(fd);
  std::unique_ptr<Registry> reg(new Registry());
  reg->shared_ = shared;
  reg->path_ = path;
  reg->fd_ = lock_fd;
  reg->ReclaimDead();
  if (!creator && reg->Idle()) {
    // Nobody uses the devices: this process's configuration replaces the previous user's
    // (sizes, time scale), and counters leaked by killed processes are cleared.
    shared->device_count = static_cast<uint32_t>(capacities.size());
    shared->time_scale = time_scale;
    for (size_t d = 0; d < kMaxDevices; ++d) {
      shared->devices[d].capacity = d < capacities.size() ? capacities[d] : 0;
      shared->devices[d].used.store(0, std::memory_order_relaxed);
      for (auto& b : shared->devices[d].busy_until) b.store(0, std::memory_order_relaxed);
      shared->mps[d].busy_until.store(0, std::memory_order_relaxed);
      shared->mps[d].faulted.store(0, std::memory_order_relaxed);
    }
  }
  if (!reg->ClaimSlot()) {
    *error = "device registry " + path + " has no free process slot";
    return nullptr;
  }
  Log(LogLevel::kDebug, "registry %s attached (slot %d, %s)", path.c_str(), reg->slot_,
      creator ? "created" : "existing");
  return reg;
}

Registry::~Registry() {
  if (shared_ != nullptr) munmap(shared_, sizeof(Shared));
  if (fd_ >= 0) close(fd_);
}

bool Registry::LockByte(off_t at, short type) const {
  struct flock lock{};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = at;
  lock.l_len = 1;
  return fd_ >= 0 && fcntl(fd_, F_OFD_SETLK, &lock) == 0;
}

bool Registry::ByteLocked(off_t at) const {
  if (fd_ < 0) return true;  // a forked child before re-attaching: cannot tell, assume alive
  struct flock lock{};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = at;
  lock.l_len = 1;
  if (fcntl(fd_, F_OFD_GETLK, &lock) != 0) return true;
  return lock.l_type != F_UNLCK;
}

bool Registry::LockSlot(int i, short type) const { return LockByte(kSlotLockBase + i, type); }

bool Registry::SlotOwnerAlive(int i) const { return ByteLocked(kSlotLockBase + i); }

bool Registry::ClaimSlot() {
  int pid = static_cast<int>(getpid());
  uint64_t start = StartTimeOf("/proc/self/stat");
  uint64_t pid_ns = PidNamespaceOf("/proc/self/ns/pid");
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kMaxProcesses; ++i) {
      SharedProcess& p = shared_->processes[i];
      uint32_t expected = kFree;
      if (!p.state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel)) continue;
      // A dead owner's lock is gone; a reclaimer that saw this slot kLive a moment ago
      // re-checks the lock after its compare-and-swap, so the lock comes before kLive.
      if (!LockSlot(i, F_WRLCK)) {
        p.state.store(kFree, std::memory_order_release);
        Log(LogLevel::kError, "cannot lock registry slot %d of %s: %s", i, path_.c_str(),
            std::strerror(errno));
        return false;
      }
      p.pid.store(pid, std::memory_order_relaxed);
      p.start_time.store(start, std::memory_order_relaxed);
      p.pid_ns.store(pid_ns, std::memory_order_relaxed);
      for (auto& u : p.used) u.store(0, std::memory_order_relaxed);
      p.state.store(kLive, std::memory_order_release);
      slot_ = i;
      owner_pid_ = pid;
      return true;
    }
    ReclaimDead();
  }
  return false;
}

void Registry::ForgetParentAfterFork() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void Registry::ReattachAfterFork() {
  slot_ = -1;
  detached_ = false;
  if (fd_ >= 0) close(fd_);
  fd_ = open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);  // a description of its own
  if (fd_ < 0) {
    Log(LogLevel::kError, "cannot reopen device registry %s after fork: %s", path_.c_str(),
        std::strerror(errno));
    return;
  }
  ClaimSlot();
}

void Registry::Detach() {
  if (slot_ < 0 || owner_pid_ != static_cast<int>(getpid()) || detached_.exchange(true)) return;
  SharedProcess& p = shared_->processes[slot_];
  for (uint32_t d = 0; d < shared_->device_count; ++d) {
    uint64_t bytes = p.used[d].exchange(0, std::memory_order_acq_rel);
    if (bytes != 0) shared_->devices[d].used.fetch_sub(bytes, std::memory_order_acq_rel);
  }
  p.state.store(kFree, std::memory_order_release);
  LockSlot(slot_, F_UNLCK);
}

bool Registry::Idle() const {
  for (const SharedProcess& p : shared_->processes) {
    if (p.state.load(std::memory_order_acquire) != kFree) return false;
  }
  return true;
}

int Registry::ReclaimDead() {
  int reclaimed = 0;
  for (int i = 0; i < kMaxProcesses; ++i) {
    if (i == slot_) continue;
    SharedProcess& p = shared_->processes[i];
    if (p.state.load(std::memory_order_acquire) != kLive) continue;
    if (SlotOwnerAlive(i)) continue;
    uint32_t expected = kLive;
    if (!p.state.compare_exchange_strong(expected, kReclaiming, std::memory_order_acq_rel)) continue;
    // Re-check: the slot may have been freed and re-claimed by a live process in between.
    if (SlotOwnerAlive(i)) {
      p.state.store(kLive, std::memory_order_release);
      continue;
    }
    for (uint32_t d = 0; d < shared_->device_count; ++d) {
      uint64_t bytes = p.used[d].exchange(0, std::memory_order_acq_rel);
      if (bytes != 0) shared_->devices[d].used.fetch_sub(bytes, std::memory_order_acq_rel);
    }
    Log(LogLevel::kInfo, "reclaimed the device memory of dead process %d", p.pid.load());
    p.state.store(kFree, std::memory_order_release);
    ++reclaimed;
  }
  return reclaimed;
}

void Registry::SetVisibleDevices(std::vector<int> registry_devices) {
  visible_ = std::move(registry_devices);
}

uint64_t Registry::BusyUntil(int dev, Timeline timeline) const {
  return shared_->devices[RegistryDevice(dev)].busy_until[timeline].load(std::memory_order_acquire);
}

int Registry::device_count() const { return static_cast<int>(shared_->device_count); }
double Registry::time_scale() const { return shared_->time_scale; }
uint64_t Registry::Capacity(int dev) const { return shared_->devices[RegistryDevice(dev)].capacity; }
uint64_t Registry::Used(int dev) const {
  return shared_->devices[RegistryDevice(dev)].used.load(std::memory_order_acquire);
}
uint64_t Registry::UsedByThisProcess(int dev) const {
  return slot_ < 0 ? 0
                   : shared_->processes[slot_].used[RegistryDevice(dev)].load(
                         std::memory_order_acquire);
}

bool Registry::Reserve(int dev, uint64_t bytes) { return ReserveBytes(RegistryDevice(dev), bytes, true); }

bool Registry::ReserveBytes(int rdev, uint64_t bytes, bool capped) {
  if (detached_.load(std::memory_order_acquire)) return false;
  SharedDevice& d = shared_->devices[rdev];
  for (int attempt = 0; attempt < 2; ++attempt) {
    uint64_t used = d.used.load(std::memory_order_acquire);
    if (uint64_t limit = limit_[rdev].load(std::memory_order_relaxed); capped && limit != 0) {
      const uint64_t held =
          slot_ < 0 ? 0 : shared_->processes[slot_].used[rdev].load(std::memory_order_acquire);
      const uint64_t mine = held - exempt_[rdev].load(std::memory_order_relaxed);
      if (mine + bytes > limit || mine + bytes < mine) return false;  // the process's own cap
    }
    while (used + bytes <= d.capacity && used + bytes >= used) {
      if (d.used.compare_exchange_weak(used, used + bytes, std::memory_order_acq_rel)) {
        if (slot_ >= 0) shared_->processes[slot_].used[rdev].fetch_add(bytes, std::memory_order_acq_rel);
        return true;
      }
    }
    if (attempt == 0 && ReclaimDead() == 0) break;
  }
  return false;
}

void Registry::Release(int dev, uint64_t bytes) { ReleaseBytes(RegistryDevice(dev), bytes); }

void Registry::ReleaseBytes(int rdev, uint64_t bytes) {
  if (detached_.load(std::memory_order_acquire)) return;
  if (slot_ >= 0) shared_->processes[slot_].used[rdev].fetch_sub(bytes, std::memory_order_acq_rel);
  shared_->devices[rdev].used.fetch_sub(bytes, std::memory_order_acq_rel);
}

SimInterval Registry::ReserveInterval(int dev, Timeline timeline, uint64_t earliest_ns,
                                      uint64_t duration_ns) {
  const int rdev = RegistryDevice(dev);
  std::atomic<uint64_t>& busy = shared_->devices[rdev].busy_until[timeline];
  uint64_t current = busy.load(std::memory_order_acquire);
  if (timeline == kComputeTimeline) {
    // Exclusive work starts after the MPS kernels running now (docs/simcuda.md "MPS mode").
    uint64_t mps = shared_->mps[rdev].busy_until.load(std::memory_order_acquire);
    if (mps > earliest_ns) earliest_ns = mps;
  }
  while (true) {
    if (duration_ns == 0) return {earliest_ns, earliest_ns};
    uint64_t start = current > earliest_ns ? current : earliest_ns;
    uint64_t end = start + duration_ns;
    if (busy.compare_exchange_weak(current, end, std::memory_order_acq_rel)) return {start, end};
  }
}

}  // namespace simcuda
