// Checkpoint and restore of this process's device memory (see checkpoint.h): plain
// allocations are copied into host buffers and their ranges left reserved (PROT_NONE); VMM
// physical memory is handled by vmm.cc. The copies take simulated time at the link bandwidth.
#include <sys/mman.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "allocations.h"
#include "checkpoint.h"
#include "context.h"
#include "driver.h"
#include "handle_set.h"
#include "sim_clock.h"
#include "vmm.h"

namespace simcuda {
namespace {

struct SavedRange {
  uintptr_t base;
  size_t mapped;
  int device;
  std::vector<unsigned char> data;
};

struct Saved {
  std::mutex mu;
  std::vector<SavedRange> ranges;  // guarded by mu
};

Saved& S() {
  static Saved* s = new Saved();
  return *s;
}

// Sleeps for the simulated time `bytes` take over device `dev`'s link.
void ModelLink(const std::map<int, uint64_t>& bytes_per_device, Timeline timeline) {
  uint64_t end = SimNowNs();
  for (const auto& [dev, bytes] : bytes_per_device) {
    const DeviceSpec& spec = Driver()->devices[static_cast<size_t>(dev)].spec;
    SimInterval iv = Driver()->registry->ReserveInterval(
        dev, timeline, SimNowNs(), TransferNs(static_cast<double>(bytes), spec.link_bytes_per_s));
    end = std::max(end, iv.end_ns);
  }
  SleepUntilSim(end);
}

bool IsPlainDevice(const Allocation& a) { return a.kind == MemKind::kDevice || a.kind == MemKind::kManaged; }

}  // namespace

CUresult CheckpointDeviceMemory() {
  Saved& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  std::map<int, uint64_t> moved;
  for (const Allocation& a : AllocationTable::Instance().Select(IsPlainDevice)) {
    SavedRange r{a.base, a.mapped, a.device, {}};
    r.data.resize(a.mapped);
    std::memcpy(r.data.data(), reinterpret_cast<void*>(a.base), a.mapped);
    void* p = mmap(reinterpret_cast<void*>(a.base), a.mapped, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OPERATING_SYSTEM;
    Driver()->registry->Release(a.device, a.mapped);
    moved[a.device] += a.mapped;
    s.ranges.push_back(std::move(r));
  }
  if (VmmCheckpoint() < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  ModelLink(moved, kDeviceToHostTimeline);
  return CUDA_SUCCESS;
}

CUresult RestoreDeviceMemory(const std::vector<int>& device_map) {
  auto target = [&](int dev) {
    return dev >= 0 && static_cast<size_t>(dev) < device_map.size() ? device_map[static_cast<size_t>(dev)] : dev;
  };
  Saved& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  std::map<int, uint64_t> moved;
  while (!s.ranges.empty()) {
    SavedRange& r = s.ranges.back();
    int dev = target(r.device);
    if (!Driver()->registry->Reserve(dev, r.mapped)) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = mmap(reinterpret_cast<void*>(r.base), r.mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) {
      Driver()->registry->Release(dev, r.mapped);
      return CUDA_ERROR_OPERATING_SYSTEM;
    }
    std::memcpy(p, r.data.data(), r.mapped);
    AllocationTable::Instance().Update(r.base, [dev](Allocation& a) { a.device = dev; });
    moved[dev] += r.mapped;
    s.ranges.pop_back();
  }
  if (VmmRestore(device_map) < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  // Contexts (and their primary-context slots) move with their memory.
  DriverState* d = Driver();
  {
    std::lock_guard<std::mutex> plock(d->primary_mu);
    for (size_t old = 0; old < device_map.size(); ++old) {
      size_t to = static_cast<size_t>(device_map[old]);
      // An inactive primary context left on the target (retained and released earlier: the
      // handle outlives its last release) gives way; an active one keeps its slot.
      if (to != old && d->primary[old].ctx != nullptr &&
          (d->primary[to].ctx == nullptr || d->primary[to].refs == 0)) {
        d->primary[to] = d->primary[old];
        d->primary[old] = PrimaryContext{};
      }
    }
  }
  for (CUctx_st* ctx : HandleSet<CUctx_st>::Instance().Snapshot()) ctx->device = target(ctx->device);
  ModelLink(moved, kHostToDeviceTimeline);
  return CUDA_SUCCESS;
}

}  // namespace simcuda
