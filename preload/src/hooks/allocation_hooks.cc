// Allocation hooks: every device allocation the application makes is served by VgpuMemory from
// shim-owned virtual addresses and counted against the vGPU's quota. Every memory pool maps
// onto the one vGPU (pool attributes are ignored for placement).
#include "hooks/export.h"
#include "hooks/external_tracker.h"
#include "hooks/memory_access.h"
#include "runtime/backtrace.h"

using gshare::memory::VgpuMemory;
using gshare::preload::AccessMemory;
using gshare::preload::Runtime;

namespace {

// A _ptsz call's null stream means the per-thread default stream.
CUstream PerThread(CUstream stream) { return stream == nullptr ? CU_STREAM_PER_THREAD : stream; }

CUresult AllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  return mem->AllocateAsync(bytes, stream, dptr);
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream stream) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  return mem->FreeAsync(dptr, stream);
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  return gshare::preload::CheckResult(mem->Allocate(bytesize, dptr), "cuMemAlloc_v2");
}

GSHARE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                          size_t Height, unsigned int ElementSizeBytes) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  return mem->AllocatePitch(WidthInBytes, Height, ElementSizeBytes, dptr, pPitch);
}

GSHARE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  // Like the driver's cuMemFree: queued work that still uses the memory finishes before it is
  // unmapped (a kernel writing a freed buffer would fault otherwise).
  if (dptr != 0) rt->SynchronizeBeforeFree();
  const CUresult r = mem->Free(dptr);
  if (r != CUDA_ERROR_INVALID_VALUE) return r;
  // Not a vGPU allocation: managed memory and the v1 cuMemAlloc's (legacy_alloc_hooks.cc) are
  // freed with cuMemFree too.
  auto& external = gshare::preload::ExternalTracker::Get();
  auto managed = external.Take(dptr, gshare::memory::ExternalKind::kManaged);
  if (!managed) managed = external.Take(dptr, gshare::memory::ExternalKind::kLegacy);
  if (!managed || rt->real().cuMemFree_v2 == nullptr) return r;
  const CUresult freed = rt->real().cuMemFree_v2(dptr);
  if (freed == CUDA_SUCCESS) {
    mem->UntrackExternal(managed->kind, managed->bytes);
  } else {
    gshare::preload::ExternalTracker::Get().Add(dptr, *managed);
  }
  return freed;
}

GSHARE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return AllocAsync(dptr, bytesize, hStream);
}
GSHARE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                            CUstream hStream) {
  return AllocAsync(dptr, bytesize, PerThread(hStream));
}
GSHARE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize,
                                               CUmemoryPool /*pool*/, CUstream hStream) {
  return AllocAsync(dptr, bytesize, hStream);
}
GSHARE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                    CUmemoryPool /*pool*/, CUstream hStream) {
  return AllocAsync(dptr, bytesize, PerThread(hStream));
}
GSHARE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return FreeAsync(dptr, hStream);
}
GSHARE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return FreeAsync(dptr, PerThread(hStream));
}

}  // extern "C"
