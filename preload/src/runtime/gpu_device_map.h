// The arbiter's GPU ordinals as this process's CUDA devices. They are the same numbers, except
// for an MPS client: NVIDIA's MPS server shows a client only the GPUs its control daemon sees
// (the daemon's CUDA_VISIBLE_DEVICES), numbered from 0, and the arbiter starts one daemon per
// co-run GPU, so a client of GPU 1's daemon sees GPU 1 as its device 0. FindCorunDevice finds
// that device after the real cuInit (by the UUID the share answer named, or, without one, as
// the only device of an MPS client of the answer's daemon); the map then translates what the
// arbiter says (registration, grants, swap orders) to the process's devices and back.
//
// Thread-safety: Map is called once, inside cuInit, before the arbiter client's thread starts;
// afterwards the map is read-only.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>

#include "runtime/mps_share.h"
#include "runtime/real_driver.h"

namespace gshare::preload {

class GpuDeviceMap {
 public:
  // From now on the arbiter's GPU `gpu` is this process's `device`, and no other GPU is visible.
  void Map(uint32_t gpu, CUdevice device) {
    mapped_ = true;
    gpu_ = gpu;
    device_ = device;
  }
  [[nodiscard]] bool mapped() const { return mapped_; }
  [[nodiscard]] CUdevice mapped_device() const { return device_; }  // meaningful when mapped()
  // The process's device of the arbiter's GPU `gpu`; kNotVisible when the process cannot see it.
  [[nodiscard]] CUdevice DeviceOf(uint32_t gpu) const {
    if (!mapped_) return static_cast<CUdevice>(gpu);
    return gpu == gpu_ ? device_ : kNotVisible;
  }
  // The arbiter's GPU of the process's `device`.
  [[nodiscard]] uint32_t GpuOf(CUdevice device) const {
    return mapped_ && device == device_ ? gpu_ : static_cast<uint32_t>(device);
  }
  static constexpr CUdevice kNotVisible = -1;

 private:
  bool mapped_ = false;
  uint32_t gpu_ = 0;
  CUdevice device_ = 0;
};

// After the real cuInit: the process's device that is the GPU a co-run answer placed it on,
// when its number differs from the arbiter's ordinal (nullopt: the same number, or not found,
// which is logged). By UUID when the answer named one; else the only device of a process that
// joined the answer's daemon and came up as its MPS client.
std::optional<CUdevice> FindCorunDevice(const RealDriver& real, const CorunPlacement& placement);

}  // namespace gshare::preload
