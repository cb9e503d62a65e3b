// Memory the application obtains outside the vGPU allocator — its own VMM handles
// (cuMemCreate: PyTorch expandable segments, NCCL), managed memory and IPC imports — is counted
// against the quota before the real call (an allocation over quota fails with
// CUDA_ERROR_OUT_OF_MEMORY and reaches no driver) and given back when released. None of it is
// swappable: it stays resident while the vGPU is swapped out (see docs/preload.md).
#include "hooks/device_view.h"
#include "hooks/export.h"
#include "hooks/external_tracker.h"
#include "hooks/memory_access.h"

using gshare::memory::ExternalKind;
using gshare::memory::VgpuMemory;
using gshare::preload::AccessMemory;
using gshare::preload::ExternalTracker;
using gshare::preload::Runtime;

namespace {

// Counts `bytes` of `kind`, runs `real_call`, and keeps the count (keyed by what `key` returns
// after success) or undoes it.
template <typename Call, typename Key>
CUresult TrackedCall(ExternalKind kind, uint64_t bytes, Call real_call, Key key) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (const CUresult r = mem->TrackExternal(kind, bytes); r != CUDA_SUCCESS) return r;
  const CUresult r = real_call(rt->real());
  if (r != CUDA_SUCCESS) {
    mem->UntrackExternal(kind, bytes);
    return r;
  }
  ExternalTracker::Get().Add(key(), {kind, bytes});
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
      [&](const gshare::preload::RealDriver& real) {
        return real.cuMemCreate != nullptr ? real.cuMemCreate(handle, size, real_prop, flags)
                                           : CUDA_ERROR_NOT_SUPPORTED;
      },
      [&] { return static_cast<uint64_t>(*handle); });
}

GSHARE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return UntrackedCall(ExternalKind::kAppVmm, handle, [&](const gshare::preload::RealDriver& real) {
    return real.cuMemRelease != nullptr ? real.cuMemRelease(handle) : CUDA_ERROR_NOT_SUPPORTED;
  });
}

GSHARE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return TrackedCall(
      ExternalKind::kManaged, bytesize,
      [&](const gshare::preload::RealDriver& real) {
        return real.cuMemAllocManaged != nullptr ? real.cuMemAllocManaged(dptr, bytesize, flags)
                                                 : CUDA_ERROR_NOT_SUPPORTED;
      },
      [&] { return static_cast<uint64_t>(*dptr); });
}

GSHARE_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle,
                                             unsigned int Flags) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  const auto& real = rt->real();
  if (real.cuIpcOpenMemHandle_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  // The size is known only once the handle is open: open, measure, then count or undo.
  const CUresult r = real.cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
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

GSHARE_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  return UntrackedCall(ExternalKind::kIpcImport, dptr, [&](const gshare::preload::RealDriver& real) {
    return real.cuIpcCloseMemHandle != nullptr ? real.cuIpcCloseMemHandle(dptr)
                                               : CUDA_ERROR_NOT_SUPPORTED;
  });
}

}  // extern "C"
