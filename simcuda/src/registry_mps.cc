// The registry's MPS part: per-device tables of MPS client contexts (liveness, share, context
// memory, the demand of the kernel each one runs), the co-running rate computed from them, the
// fault generation that reaches every client of a device, and per-process memory caps.
// The model's equations are documented in docs/simcuda.md ("MPS mode").
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "log.h"
#include "registry.h"
#include "registry_layout.h"

namespace simcuda {
namespace {

constexpr double kMillionth = 1e-6;

uint64_t PackDemand(double sm, double bw) {
  auto part = [](double v) {
    v = std::clamp(v, 0.0, 1.0);
    return static_cast<uint64_t>(v * 1e6 + 0.5);
  };
  uint64_t d = part(sm);
  if (sm > 0 && d == 0) d = 1;  // a running kernel always has some demand
  return d | (part(bw) << 32);
}

off_t MpsLockByte(int dev, int slot) { return kMpsLockBase + dev * kMaxMpsClients + slot; }

}  // namespace

void Registry::SetMemoryLimit(int dev, uint64_t bytes) {
  limit_[RegistryDevice(dev)].store(bytes, std::memory_order_relaxed);
}

bool Registry::ReserveContextMemory(int dev, uint64_t bytes) {
  // Context memory is the driver's, not the program's: outside the process's cap.
  const int rdev = RegistryDevice(dev);
  exempt_[rdev].fetch_add(bytes);
  const bool ok = ReserveBytes(rdev, bytes, false);
  if (!ok) exempt_[rdev].fetch_sub(bytes);
  return ok;
}

void Registry::ReleaseContextMemory(int dev, uint64_t bytes) {
  const int rdev = RegistryDevice(dev);
  ReleaseBytes(rdev, bytes);
  exempt_[rdev].fetch_sub(bytes);
}

int Registry::MpsReclaimDead(int dev) { return MpsReclaimDeadAt(RegistryDevice(dev)); }

int Registry::MpsReclaimDeadAt(int dev) {
  int reclaimed = 0;
  for (int i = 0; i < kMaxMpsClients; ++i) {
    SharedMpsClient& c = shared_->mps[dev].clients[i];
    if (c.state.load(std::memory_order_acquire) != kLive) continue;
    if (ByteLocked(MpsLockByte(dev, i))) continue;
    uint32_t expected = kLive;
    if (!c.state.compare_exchange_strong(expected, kReclaiming, std::memory_order_acq_rel)) continue;
    if (ByteLocked(MpsLockByte(dev, i))) {  // freed and re-claimed in between
      c.state.store(kLive, std::memory_order_release);
      continue;
    }
    // Its context memory was the owner's process slot's: reclaimed with that slot.
    c.demand.store(0, std::memory_order_release);
    Log(LogLevel::kInfo, "reclaimed the MPS client slot %d of dead process %d on device %d", i,
        c.pid.load(), dev);
    c.state.store(kFree, std::memory_order_release);
    ++reclaimed;
  }
  return reclaimed;
}

MpsAttachResult Registry::MpsAttach(int local_dev, unsigned share_pct, int max_clients,
                                    uint64_t context_bytes, int* slot) {
  const int dev = RegistryDevice(local_dev);
  SharedMpsDevice& m = shared_->mps[dev];
  MpsReclaimDeadAt(dev);
  auto live_count = [&] {
    int n = 0;
    for (const SharedMpsClient& c : m.clients) n += c.state.load(std::memory_order_acquire) != kFree;
    return n;
  };
  if (m.faulted.load(std::memory_order_acquire) != 0) {
    if (live_count() > 0) return MpsAttachResult::kNotReady;
    m.faulted.store(0, std::memory_order_release);  // the last client of the faulted server left
    Log(LogLevel::kInfo, "MPS server of device %d: every client of the faulted server has exited", dev);
  }
  if (live_count() >= max_clients) return MpsAttachResult::kMaxClients;
  for (int i = 0; i < kMaxMpsClients && i < max_clients; ++i) {
    SharedMpsClient& c = m.clients[i];
    uint32_t expected = kFree;
    if (!c.state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel)) continue;
    if (!LockByte(MpsLockByte(dev, i), F_WRLCK)) {
      c.state.store(kFree, std::memory_order_release);
      return MpsAttachResult::kMaxClients;
    }
    c.uid.store(static_cast<uint32_t>(geteuid()), std::memory_order_relaxed);
    c.pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
    c.share_pct.store(share_pct, std::memory_order_relaxed);
    c.fault_gen.store(m.fault_gen.load(std::memory_order_acquire), std::memory_order_relaxed);
    c.context_bytes.store(context_bytes, std::memory_order_relaxed);
    c.demand.store(0, std::memory_order_relaxed);
    c.state.store(kLive, std::memory_order_release);
    // Two contexts attaching at once may both have seen room: the later one backs off.
    if (live_count() > max_clients || m.faulted.load(std::memory_order_acquire) != 0) {
      const bool faulted = m.faulted.load(std::memory_order_acquire) != 0;
      MpsDetachAt(dev, i);
      return faulted ? MpsAttachResult::kNotReady : MpsAttachResult::kMaxClients;
    }
    *slot = i;
    return MpsAttachResult::kOk;
  }
  return MpsAttachResult::kMaxClients;
}

void Registry::MpsDetach(int dev, int slot) { MpsDetachAt(RegistryDevice(dev), slot); }

void Registry::MpsDetachAt(int dev, int slot) {
  SharedMpsClient& c = shared_->mps[dev].clients[slot];
  c.demand.store(0, std::memory_order_release);
  c.state.store(kFree, std::memory_order_release);
  LockByte(MpsLockByte(dev, slot), F_UNLCK);
}

void Registry::MpsSetDemand(int dev, int slot, double sm_fraction, double bandwidth_fraction) {
  shared_->mps[RegistryDevice(dev)].clients[slot].demand.store(
      sm_fraction <= 0 ? 0 : PackDemand(sm_fraction, bandwidth_fraction), std::memory_order_release);
}

double Registry::MpsRate(int local_dev, int slot) {
  const int dev = RegistryDevice(local_dev);
  // a_j = min(d_j, s_j); A = sum a_j; c_j = a_j / max(1, A) / d_j; U = sum b_j c_j;
  // rate_i = c_i / max(1, U).
  struct Running {
    double d, b, a;
  };
  Running mine{0, 0, 0};
  Running all[kMaxMpsClients];
  int n = 0;
  double a_sum = 0;
  SharedMpsDevice& m = shared_->mps[dev];
  for (int j = 0; j < kMaxMpsClients; ++j) {
    SharedMpsClient& c = m.clients[j];
    if (c.state.load(std::memory_order_acquire) != kLive) continue;
    const uint64_t packed = c.demand.load(std::memory_order_acquire);
    if (packed == 0) continue;
    if (j != slot && !ByteLocked(MpsLockByte(dev, j))) {
      MpsReclaimDeadAt(dev);  // a client killed while its kernel ran no longer competes
      continue;
    }
    const double d = static_cast<double>(packed & 0xffffffffu) * kMillionth;
    const double b = static_cast<double>(packed >> 32) * kMillionth;
    const double s = c.share_pct.load(std::memory_order_relaxed) / 100.0;
    Running r{d, b, std::min(d, s)};
    a_sum += r.a;
    all[n++] = r;
    if (j == slot) mine = r;
  }
  if (mine.d <= 0) return 1.0;
  const double sm_scale = a_sum > 1 ? 1 / a_sum : 1;
  double u_sum = 0;
  for (int k = 0; k < n; ++k) u_sum += all[k].b * (all[k].a * sm_scale / all[k].d);
  const double c = mine.a * sm_scale / mine.d;
  return c / std::max(1.0, u_sum);
}

void Registry::MpsRaiseFault(int dev) {
  SharedMpsDevice& m = shared_->mps[RegistryDevice(dev)];
  m.faulted.store(1, std::memory_order_release);
  m.fault_gen.fetch_add(1, std::memory_order_acq_rel);
}

bool Registry::MpsFaulted(int dev, int slot) const {
  const SharedMpsDevice& m = shared_->mps[RegistryDevice(dev)];
  return m.fault_gen.load(std::memory_order_acquire) !=
         m.clients[slot].fault_gen.load(std::memory_order_relaxed);
}

void Registry::MpsExtendBusy(int dev, uint64_t until_ns) {
  std::atomic<uint64_t>& busy = shared_->mps[RegistryDevice(dev)].busy_until;
  uint64_t current = busy.load(std::memory_order_acquire);
  while (current < until_ns &&
         !busy.compare_exchange_weak(current, until_ns, std::memory_order_acq_rel)) {
  }
}

uint64_t Registry::MpsBusyUntil(int dev) const {
  return shared_->mps[RegistryDevice(dev)].busy_until.load(std::memory_order_acquire);
}

}  // namespace simcuda
