// The one-device view (docs/multi-gpu.md) applied to memory locations: the application knows a
// single device and may name it two ways — the CUdevice cuDeviceGet handed out (the physical
// GPU) or its ordinal 0 (cudart's device index, which PyTorch's expandable segments put in
// CUmemAllocationProp.location.id and CUmemAccessDesc.location.id). Both mean the vGPU's GPU.
#pragma once

#include <cuda.h>

#include "runtime/runtime.h"

namespace gshare::preload {

// For a CU_MEM_LOCATION_TYPE_DEVICE location naming 0 or the application's device: rewrites
// the id to the physical device and returns CUDA_SUCCESS; any other device id is
// CUDA_ERROR_INVALID_DEVICE (a GPU the application does not see). Other location types are left
// as they are. Before a successful cuInit (no device view yet) nothing is changed.
inline CUresult MapDeviceLocation(const Runtime& rt, CUmemLocation* location) {
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || rt.memory() == nullptr) return CUDA_SUCCESS;
  const CUdevice app = rt.AppDevice();
  if (location->id != 0 && location->id != app) return CUDA_ERROR_INVALID_DEVICE;
  location->id = app;
  return CUDA_SUCCESS;
}

}  // namespace gshare::preload
