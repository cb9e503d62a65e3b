// Capacity views and pointer queries: the application sees its vGPU bounded by its GPU (total =
// min(quota, GPU), free moves as it allocates, never underflows and never exceeds what the GPU
// can give; the v1 entry points the same, clamped to 32 bits), and pointer queries on shim-owned memory report the
// application's allocation (its base and requested size), not the chunk behind it.
#include <limits>

#include "hooks/device_view.h"
#include "hooks/export.h"
#include "hooks/memory_access.h"

using gshare::memory::VgpuMemory;
using gshare::preload::AccessMemory;
using gshare::preload::Runtime;

namespace {

// The 32-bit answer of a v1 entry point: sizes beyond 4 GiB read as the largest it can hold.
unsigned int Clamp32(size_t bytes) {
  return bytes > std::numeric_limits<unsigned int>::max() ? std::numeric_limits<unsigned int>::max()
                                                          : static_cast<unsigned int>(bytes);
}

// cuMemGetInfo: the vGPU bounded by its GPU (VgpuMemory::GetInfoOnDevice, docs/vgpu-memory.md):
// total = min(quota, the GPU's memory), free = what both the quota and the GPU can still give.
// The GPU's figures are the driver's cuMemGetInfo in the caller's context (the application's
// one device is the vGPU's GPU); without one (no current context) the quota view alone.
CUresult MemGetInfo(size_t* free, size_t* total) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) {
    if (r != CUDA_ERROR_NOT_INITIALIZED || rt->real().cuMemGetInfo_v2 == nullptr) return r;
    return rt->real().cuMemGetInfo_v2(free, total);  // the driver's own answer before cuInit
  }
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t device_free = 0;
  size_t device_total = 0;
  if (rt->real().cuMemGetInfo_v2 != nullptr &&
      rt->real().cuMemGetInfo_v2(&device_free, &device_total) == CUDA_SUCCESS) {
    mem->GetInfoOnDevice(device_free, device_total, free, total);
  } else {
    mem->GetInfo(free, total);  // polls completed stream-ordered frees itself (one lock)
  }
  return CUDA_SUCCESS;
}

// cuDeviceTotalMem: the GPU's memory (the driver's answer for the application's one device),
// at most the quota.
CUresult DeviceTotalMem(size_t* bytes, CUdevice dev) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  const CUresult access = AccessMemory(&rt, &mem);
  if (access != CUDA_SUCCESS && access != CUDA_ERROR_NOT_INITIALIZED) return access;
  if (rt->real().cuDeviceTotalMem_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  // The application's one device, by its CUdevice or ordinal 0 (hooks/device_view.h).
  if (const CUresult m = gshare::preload::MapDevice(*rt, &dev); m != CUDA_SUCCESS) return m;
  const CUresult r = rt->real().cuDeviceTotalMem_v2(bytes, dev);  // validates dev and bytes
  if (r != CUDA_SUCCESS || mem == nullptr) return r;
  size_t total = 0;
  mem->GetInfo(nullptr, &total);
  if (total < *bytes) *bytes = total;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  return MemGetInfo(free, total);
}

// The v1 entry point (32-bit sizes): the same view, clamped.
GSHARE_EXPORT CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t f = 0;
  size_t t = 0;
  const CUresult r = MemGetInfo(&f, &t);
  if (r == CUDA_SUCCESS) {
    *free = Clamp32(f);
    *total = Clamp32(t);
  }
  return r;
}

GSHARE_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return DeviceTotalMem(bytes, dev);
}

GSHARE_EXPORT CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t b = 0;
  const CUresult r = DeviceTotalMem(&b, dev);
  if (r == CUDA_SUCCESS) *bytes = Clamp32(b);
  return r;
}

// v1 pointers are never shim-owned (vGPU addresses do not fit 32 bits): the driver's answer.
GSHARE_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr_v1* pbase, unsigned int* psize,
                                            CUdeviceptr_v1 dptr) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  if (rt.real().cuMemGetAddressRange == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return rt.real().cuMemGetAddressRange(pbase, psize, dptr);
}

GSHARE_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize,
                                               CUdeviceptr dptr) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (AccessMemory(&rt, &mem) == CUDA_SUCCESS &&
      mem->LookupRange(dptr, pbase, psize) == CUDA_SUCCESS) {
    return CUDA_SUCCESS;
  }
  if (rt->real().cuMemGetAddressRange_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return rt->real().cuMemGetAddressRange_v2(pbase, psize, dptr);
}

GSHARE_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                             CUdeviceptr ptr) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  const bool range = attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
                     attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE;
  if (AccessMemory(&rt, &mem) == CUDA_SUCCESS && range && data != nullptr) {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (mem->LookupRange(ptr, &base, &size) == CUDA_SUCCESS) {
      if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) {
        *static_cast<CUdeviceptr*>(data) = base;
      } else {
        *static_cast<size_t*>(data) = size;
      }
      return CUDA_SUCCESS;
    }
  }
  if (rt->real().cuPointerGetAttribute == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return rt->real().cuPointerGetAttribute(data, attribute, ptr);
}

GSHARE_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                              CUpointer_attribute* attributes, void** data,
                                              CUdeviceptr ptr) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  const CUresult access = AccessMemory(&rt, &mem);
  if (rt->real().cuPointerGetAttributes == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = rt->real().cuPointerGetAttributes(numAttributes, attributes, data, ptr);
  if (r != CUDA_SUCCESS || access != CUDA_SUCCESS || attributes == nullptr || data == nullptr) {
    return r;
  }
  // Only the range attributes differ from the driver's answer: look the allocation up (a lock
  // and a map search) only when one is asked (cudart's cudaPointerGetAttributes asks none).
  bool range = false;
  for (unsigned int i = 0; i < numAttributes && !range; ++i) {
    range = attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
            attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE;
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  if (!range || mem->LookupRange(ptr, &base, &size) != CUDA_SUCCESS) return r;
  for (unsigned int i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) continue;
    if (attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) {
      *static_cast<CUdeviceptr*>(data[i]) = base;
    } else if (attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE) {
      *static_cast<size_t*>(data[i]) = size;
    }
  }
  return r;
}

}  // extern "C"
