// The one-device view (docs/multi-gpu.md) applied to arguments: the application knows a single
// device and may name it two ways — the CUdevice cuDeviceGet handed out (the physical GPU) or its
// ordinal 0 (cudart's device index, which PyTorch's expandable segments put in
// CUmemAllocationProp.location.id and CUmemAccessDesc.location.id; driver-API code passing a
// literal 0 to cuCtxCreate, cuDevicePrimaryCtxRetain, cuDeviceGetAttribute, ...). Both mean the
// vGPU's GPU. So does a handle the application was given before the vGPU moved to another GPU
// (the driver's checkpoint restore moved its contexts): it still names its one device.
//
// Thread-safety: lock-free; the set of devices seen is one atomic word.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "runtime/runtime.h"

namespace gshare::preload {

// The physical GPUs the application's device has been (bit per ordinal below 64), noted at
// every hooked device call: what the application may have been handed as its CUdevice.
inline std::atomic<uint64_t>& DevicesSeen() {
  static std::atomic<uint64_t> seen{0};
  return seen;
}

// True when `dev` names the application's device `app`: 0, `app`, or a GPU `app` was on before.
inline bool NamesAppDevice(CUdevice dev, CUdevice app) {
  std::atomic<uint64_t>& seen = DevicesSeen();
  uint64_t bits = seen.load(std::memory_order_relaxed);
  if (app >= 0 && app < 64 && (bits & (1ull << app)) == 0) {
    bits = seen.fetch_or(1ull << app, std::memory_order_relaxed) | (1ull << app);
  }
  if (dev == 0 || dev == app) return true;
  return dev > 0 && dev < 64 && (bits & (1ull << dev)) != 0;
}

// A CUdevice argument: rewritten to the physical device when it names the application's device
// (above) and CUDA_SUCCESS returned; any other value is CUDA_ERROR_INVALID_DEVICE (a GPU the
// application does not see, as cuDeviceGet(1) is). Before a successful cuInit (no device view
// yet) nothing is changed.
inline CUresult MapDevice(const Runtime& rt, CUdevice* dev) {
  if (rt.memory() == nullptr) return CUDA_SUCCESS;
  const CUdevice app = rt.AppDevice();
  if (!NamesAppDevice(*dev, app)) return CUDA_ERROR_INVALID_DEVICE;
  *dev = app;
  return CUDA_SUCCESS;
}

// As MapDevice, but CU_DEVICE_CPU (cuMemAdvise, cuMemPrefetchAsync: host memory) passes as is.
inline CUresult MapDeviceOrCpu(const Runtime& rt, CUdevice* dev) {
  return *dev == CU_DEVICE_CPU ? CUDA_SUCCESS : MapDevice(rt, dev);
}

// A CU_MEM_LOCATION_TYPE_DEVICE location: its id mapped as MapDevice does. Other location types
// (host, host NUMA) are left as they are.
inline CUresult MapDeviceLocation(const Runtime& rt, CUmemLocation* location) {
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_SUCCESS;
  return MapDevice(rt, &location->id);
}

// An array of `count` locations (or of structs holding one, `loc` picking it) copied into *out
// with every device location mapped; CUDA_ERROR_INVALID_DEVICE names an unseen GPU.
template <typename T, typename Loc>
CUresult MapLocations(const Runtime& rt, const T* items, size_t count, std::vector<T>* out,
                      Loc loc) {
  out->assign(items, items + count);
  for (T& item : *out) {
    if (const CUresult r = MapDeviceLocation(rt, loc(item)); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// The access descriptors of cuMemSetAccess / cuMemPoolSetAccess, mapped (MapLocations).
inline CUresult MapAccessDescs(const Runtime& rt, const CUmemAccessDesc* desc, size_t count,
                               std::vector<CUmemAccessDesc>* out) {
  return MapLocations(rt, desc, count, out, [](CUmemAccessDesc& d) { return &d.location; });
}

}  // namespace gshare::preload
