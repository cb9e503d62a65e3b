// The real driver entry points the vGPU memory manager calls (its "Env", in leveldb terms):
// one table of function pointers, filled from a resolver so the preloaded shim resolves them
// from the real driver, tests resolve them from simcuda with dlsym, and unit tests pass a fake.
//
// Thread-safety: a filled DeviceApi is an immutable value; copy it freely.
#pragma once

#include <cuda.h>

#include <string>

namespace gshare::memory {

// X(member, "versioned symbol", declared function). The versioned names are those a CUDA 12/13
// driver exports; `member` has exactly the declared function's type.
#define GSHARE_MEMORY_DEVICE_API(X)                                              \
  X(mem_create, "cuMemCreate", cuMemCreate)                                     \
  X(mem_release, "cuMemRelease", cuMemRelease)                                  \
  X(mem_address_reserve, "cuMemAddressReserve", cuMemAddressReserve)            \
  X(mem_address_free, "cuMemAddressFree", cuMemAddressFree)                     \
  X(mem_map, "cuMemMap", cuMemMap)                                              \
  X(mem_unmap, "cuMemUnmap", cuMemUnmap)                                        \
  X(mem_set_access, "cuMemSetAccess", cuMemSetAccess)                           \
  X(mem_get_allocation_granularity, "cuMemGetAllocationGranularity",            \
    cuMemGetAllocationGranularity)                                              \
  X(mem_host_alloc, "cuMemHostAlloc", cuMemHostAlloc)                           \
  X(mem_free_host, "cuMemFreeHost", cuMemFreeHost)                              \
  X(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2", cuMemcpyDtoHAsync_v2)            \
  X(memcpy_htod_async, "cuMemcpyHtoDAsync_v2", cuMemcpyHtoDAsync_v2)            \
  X(stream_create, "cuStreamCreate", cuStreamCreate)                            \
  X(stream_destroy, "cuStreamDestroy_v2", cuStreamDestroy_v2)                   \
  X(stream_synchronize, "cuStreamSynchronize", cuStreamSynchronize)             \
  X(event_create, "cuEventCreate", cuEventCreate)                               \
  X(event_destroy, "cuEventDestroy_v2", cuEventDestroy_v2)                      \
  X(event_record, "cuEventRecord", cuEventRecord)                               \
  X(event_query, "cuEventQuery", cuEventQuery)                                  \
  X(event_synchronize, "cuEventSynchronize", cuEventSynchronize)                \
  X(ctx_get_current, "cuCtxGetCurrent", cuCtxGetCurrent)                        \
  X(ctx_get_device, "cuCtxGetDevice", cuCtxGetDevice)                           \
  X(ctx_push_current, "cuCtxPushCurrent_v2", cuCtxPushCurrent_v2)               \
  X(ctx_pop_current, "cuCtxPopCurrent_v2", cuCtxPopCurrent_v2)                  \
  X(device_primary_ctx_retain, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain) \
  X(device_primary_ctx_release, "cuDevicePrimaryCtxRelease_v2",                 \
    cuDevicePrimaryCtxRelease_v2)

// Pointers to the real driver functions. A default-constructed DeviceApi has every member null;
// ResolveDeviceApi fills all of them or reports which are missing.
struct DeviceApi {
#define GSHARE_MEMORY_DECLARE_MEMBER(member, name, fn) decltype(&::fn) member = nullptr;
  GSHARE_MEMORY_DEVICE_API(GSHARE_MEMORY_DECLARE_MEMBER)
#undef GSHARE_MEMORY_DECLARE_MEMBER

  // True when every member is non-null.
  [[nodiscard]] bool complete() const;
};

// Looks up one versioned driver symbol; returns null when absent. `ctx` is passed through.
// Must not call back into the vGPU memory manager.
using DriverResolver = void* (*)(const char* versioned_name, void* ctx);

// Fills *api through `resolve`. Returns CUDA_SUCCESS when every symbol was found; otherwise
// CUDA_ERROR_NOT_FOUND, leaves the found members set, and (when `missing` is non-null) stores
// the space-separated names of the missing symbols in *missing.
// REQUIRES: resolve != nullptr, api != nullptr.
[[nodiscard]] CUresult ResolveDeviceApi(DriverResolver resolve, void* ctx, DeviceApi* api,
                                        std::string* missing = nullptr);

}  // namespace gshare::memory
