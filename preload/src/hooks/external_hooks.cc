// Memory the application obtains outside the vGPU allocator — its own VMM handles
// (cuMemCreate: PyTorch expandable segments, NCCL), managed memory and IPC imports — is counted
// against the quota before the real call (an allocation over quota fails with
// CUDA_ERROR_OUT_OF_MEMORY and reaches no driver) and given back when the driver frees it. A VMM
// handle's memory lives until its last reference and its last mapping are gone (the usual idiom
// releases the handle right after mapping it), so cuMemMap/cuMemUnmap, cuMemRelease,
// cuMemRetainAllocationHandle and cuMemImportFromShareableHandle keep its books (VmmTracker).
// None of it is swappable: it stays resident while the vGPU is swapped out (docs/preload.md).
#include "hooks/device_view.h"
#include "hooks/export.h"
#include "hooks/external_tracker.h"
#include "hooks/memory_access.h"
#include "hooks/vmm_tracker.h"

using gshare::memory::ExternalKind;
using gshare::memory::VgpuMemory;
using gshare::preload::AccessMemory;
using gshare::preload::ExternalTracker;
using gshare::preload::RealDriver;
using gshare::preload::Runtime;
using gshare::preload::VmmTracker;

namespace {

// Counts `bytes` of `kind`, runs `real_call`, and on success tells `counted()` (which records
// the memory for its release), else undoes the count.
template <typename Call, typename Counted>
CUresult TrackedCall(ExternalKind kind, uint64_t bytes, Call real_call, Counted counted) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (const CUresult r = mem->TrackExternal(kind, bytes); r != CUDA_SUCCESS) return r;
  const CUresult r = real_call(rt->real());
  if (r != CUDA_SUCCESS) {
    mem->UntrackExternal(kind, bytes);
    return r;
  }
  counted();
  return r;
}

// Runs the real release and gives the tracked bytes of `key` back.
template <typename Call>
CUresult UntrackedCall(ExternalKind kind, uint64_t key, Call real_call) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  const CUresult r = real_call(rt->real());
  if (r == CUDA_SUCCESS) {
    if (const auto entry = ExternalTracker::Get().Take(key, kind)) {
      mem->UntrackExternal(kind, entry->bytes);
    }
  }
  return r;
}

void GiveBack(VgpuMemory* mem, const VmmTracker::Freed& freed) {
  if (freed.bytes != 0) mem->UntrackExternal(freed.kind, freed.bytes);
}

// cuIpcOpenMemHandle (v1, CUDA 4.1 ABI) and cuIpcOpenMemHandle_v2 take the same arguments.
template <typename Open>
CUresult IpcOpen(Open RealDriver::*open, CUdeviceptr* pdptr, CUipcMemHandle handle,
                 unsigned int flags) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  const auto& real = rt->real();
  if (real.*open == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  // The size is known only once the handle is open: open, measure, then count or undo.
  const CUresult r = (real.*open)(pdptr, handle, flags);
  if (r != CUDA_SUCCESS) return r;
  CUdeviceptr base = 0;
  size_t size = 0;
  if (real.cuMemGetAddressRange_v2 == nullptr ||
      real.cuMemGetAddressRange_v2(&base, &size, *pdptr) != CUDA_SUCCESS) {
    size = 0;  // cannot measure: tracked as zero bytes, documented
  }
  if (mem->TrackExternal(ExternalKind::kIpcImport, size) != CUDA_SUCCESS) {
    if (real.cuIpcCloseMemHandle != nullptr) (void)real.cuIpcCloseMemHandle(*pdptr);
    *pdptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ExternalTracker::Get().Add(*pdptr, {ExternalKind::kIpcImport, size});
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                   const CUmemAllocationProp* prop, unsigned long long flags) {
  // Only device memory counts; host-located handles (NCCL's) are host memory.
  const bool device =
      prop == nullptr || prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  if (!device) {
    const Runtime& rt = Runtime::Get();
    if (rt.status() != CUDA_SUCCESS) return rt.status();
    if (rt.real().cuMemCreate == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
    return rt.real().cuMemCreate(handle, size, prop, flags);
  }
  // The location names the application's one device (ordinal 0 or its CUdevice).
  CUmemAllocationProp mapped{};
  if (prop != nullptr) {
    mapped = *prop;
    if (const CUresult r = gshare::preload::MapDeviceLocation(Runtime::Get(), &mapped.location);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  const CUmemAllocationProp* real_prop = prop != nullptr ? &mapped : nullptr;
  return TrackedCall(
      ExternalKind::kAppVmm, size,
      [&](const RealDriver& real) {
        return real.cuMemCreate != nullptr ? real.cuMemCreate(handle, size, real_prop, flags)
                                           : CUDA_ERROR_NOT_SUPPORTED;
      },
      [&] { VmmTracker::Get().Created(*handle, size); });
}

GSHARE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (rt->real().cuMemRelease == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = rt->real().cuMemRelease(handle);
  if (r != CUDA_SUCCESS) return r;
  // A mapped handle's memory lives on: it is given back at its last cuMemUnmap.
  if (const auto freed = VmmTracker::Get().Released(handle)) GiveBack(mem, *freed);
  return r;
}

GSHARE_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                CUmemGenericAllocationHandle handle, unsigned long long flags) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (rt->real().cuMemMap == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  // An imported handle counts what it maps, before the mapping exists.
  const VmmTracker::Freed extra = VmmTracker::Get().ToCountForMap(handle, offset, size);
  if (extra.bytes != 0) {
    if (const CUresult r = mem->TrackExternal(extra.kind, extra.bytes); r != CUDA_SUCCESS) return r;
  }
  const CUresult r = rt->real().cuMemMap(ptr, size, offset, handle, flags);
  if (r != CUDA_SUCCESS) {
    GiveBack(mem, extra);
    return r;
  }
  VmmTracker::Get().Mapped(handle, ptr, extra.bytes);
  return r;
}

GSHARE_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (rt->real().cuMemUnmap == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = rt->real().cuMemUnmap(ptr, size);
  if (r != CUDA_SUCCESS) return r;
  for (const VmmTracker::Freed& freed : VmmTracker::Get().Unmapped(ptr, size)) GiveBack(mem, freed);
  return r;
}

GSHARE_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle,
                                                   void* addr) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (rt->real().cuMemRetainAllocationHandle == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = rt->real().cuMemRetainAllocationHandle(handle, addr);
  if (r == CUDA_SUCCESS) VmmTracker::Get().Retained(*handle);  // one more cuMemRelease to come
  return r;
}

GSHARE_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle,
                                                      void* osHandle,
                                                      CUmemAllocationHandleType shHandleType) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (rt->real().cuMemImportFromShareableHandle == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = rt->real().cuMemImportFromShareableHandle(handle, osHandle, shHandleType);
  if (r == CUDA_SUCCESS) VmmTracker::Get().Imported(*handle);  // counted by what it maps
  return r;
}

GSHARE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return TrackedCall(
      ExternalKind::kManaged, bytesize,
      [&](const RealDriver& real) {
        return real.cuMemAllocManaged != nullptr ? real.cuMemAllocManaged(dptr, bytesize, flags)
                                                 : CUDA_ERROR_NOT_SUPPORTED;
      },
      [&] { ExternalTracker::Get().Add(*dptr, {ExternalKind::kManaged, bytesize}); });
}

GSHARE_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle,
                                             unsigned int Flags) {
  return IpcOpen(&RealDriver::cuIpcOpenMemHandle_v2, pdptr, handle, Flags);
}

GSHARE_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle,
                                          unsigned int Flags) {
  return IpcOpen(&RealDriver::cuIpcOpenMemHandle, pdptr, handle, Flags);
}

GSHARE_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  return UntrackedCall(ExternalKind::kIpcImport, dptr, [&](const RealDriver& real) {
    return real.cuIpcCloseMemHandle != nullptr ? real.cuIpcCloseMemHandle(dptr)
                                               : CUDA_ERROR_NOT_SUPPORTED;
  });
}

}  // extern "C"
