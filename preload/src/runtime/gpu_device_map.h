// The arbiter's GPU ordinals as this process's CUDA devices. They are the same numbers unless
// the process's driver shows it only some GPUs, or in another order: CUDA_VISIBLE_DEVICES, a
// container given some GPUs, or an MPS client (NVIDIA's MPS server shows a client only the GPUs
// its control daemon sees, numbered from 0, and the arbiter starts one daemon per co-run GPU,
// so a client of GPU 1's daemon sees GPU 1 as its device 0). The registration names the
// process's devices by UUID (DeviceUuids) and the arbiter answers the ordinal of each (SetTable);
// before that, and with an arbiter that does not know its GPUs' UUIDs, FindCorunDevice finds
// the device of a co-run answer's GPU (by its UUID, or as the only device of an MPS client of the
// answer's daemon). The map then translates what the arbiter says (registration, grants, swap
// orders) to the process's devices and back.
//
// Thread-safety: the table is an immutable snapshot behind an atomic pointer. It is replaced
// inside cuInit and at a registration (the arbiter client's thread, while the application's
// threads translate grants): readers see the old table or the new one, whole. Replaced tables
// are kept for the process's life (one per registration: a few dozen bytes each).
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gshare/common/thread_annotations.h"
#include "runtime/mps_share.h"
#include "runtime/real_driver.h"

namespace gshare::preload {

class GpuDeviceMap {
 public:
  GpuDeviceMap() = default;
  GpuDeviceMap(const GpuDeviceMap&) = delete;
  GpuDeviceMap& operator=(const GpuDeviceMap&) = delete;
  // From now on the arbiter's GPU `gpu` is this process's `device`, and no other GPU is visible.
  void Map(uint32_t gpu, CUdevice device);
  // From now on the process's device d is the arbiter's GPU gpus[d] (shm::kNoGpu: not one it
  // manages); every other GPU is not visible.
  void SetTable(std::span<const uint32_t> gpus);
  [[nodiscard]] bool mapped() const { return table_.load(std::memory_order_acquire) != nullptr; }
  // The device the first mapped GPU is (meaningful when mapped()).
  [[nodiscard]] CUdevice mapped_device() const;
  // The process's device of the arbiter's GPU `gpu`; kNotVisible when the process cannot see it.
  [[nodiscard]] CUdevice DeviceOf(uint32_t gpu) const;
  // The arbiter's GPU of the process's `device` (its own number when not mapped, or not a GPU
  // the arbiter manages).
  [[nodiscard]] uint32_t GpuOf(CUdevice device) const;
  static constexpr CUdevice kNotVisible = -1;

 private:
  struct Table {
    std::vector<uint32_t> gpu_of_device;  // per device: the arbiter's ordinal, or kNoGpu
  };
  void Publish(std::vector<uint32_t> gpu_of_device);
  std::atomic<const Table*> table_{nullptr};
  Mutex mu_;  // Publish's: the tables kept
  std::vector<std::unique_ptr<const Table>> kept_ GUARDED_BY(mu_);
};

// The driver's UUID of each of the process's devices, in its order (at most
// shm::kMaxReportedDevices; a device whose UUID cannot be read: all 0). Empty when the driver
// cannot say. After the real cuInit.
std::vector<std::array<uint8_t, 16>> DeviceUuids(const RealDriver& real);

// After the real cuInit: the process's device that is the GPU a co-run answer placed it on,
// when its number differs from the arbiter's ordinal (nullopt: the same number, or not found,
// which is logged). By UUID when the answer named one; else the only device of a process that
// joined the answer's daemon and came up as its MPS client.
std::optional<CUdevice> FindCorunDevice(const RealDriver& real, const CorunPlacement& placement);

}  // namespace gshare::preload
