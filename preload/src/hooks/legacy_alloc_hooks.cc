// The driver's v1 allocation entry points (CUDA 2.x ABI: 32-bit CUdeviceptr_v1 and sizes), which
// an old program reaches by dlsym("cuMemAlloc") or cuGetProcAddress with a cudaVersion before
// 3020. Their addresses must fit 32 bits, so the shim cannot serve them from its own (64-bit)
// vGPU ranges: the driver allocates, and the bytes are counted against the quota first
// (ExternalKind::kLegacy: over quota -> CUDA_ERROR_OUT_OF_MEMORY without reaching the driver)
// and given back when freed, by the v1 cuMemFree or cuMemFree_v2 (allocation_hooks.cc). Like
// the application's other external memory it stays resident while the vGPU is swapped out.
#include <cstdint>

#include "hooks/export.h"
#include "hooks/external_tracker.h"
#include "hooks/memory_access.h"
#include "runtime/backtrace.h"

using gshare::memory::ExternalKind;
using gshare::memory::VgpuMemory;
using gshare::preload::AccessMemory;
using gshare::preload::ExternalTracker;
using gshare::preload::Runtime;

namespace {

// Counts `bytes`, runs `allocate` (the real v1 call), records the pointer it returned in *dptr
// or undoes the count.
template <typename Allocate>
CUresult CountedLegacyAlloc(uint64_t bytes, CUdeviceptr_v1* dptr, Allocate allocate) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult r = mem->TrackExternal(ExternalKind::kLegacy, bytes); r != CUDA_SUCCESS) {
    return r;
  }
  const CUresult r = allocate(rt->real());
  if (r != CUDA_SUCCESS) {
    mem->UntrackExternal(ExternalKind::kLegacy, bytes);
    return r;
  }
  ExternalTracker::Get().Add(*dptr, {ExternalKind::kLegacy, bytes});
  return r;
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  return gshare::preload::CheckResult(
      CountedLegacyAlloc(bytesize, dptr,
                         [&](const gshare::preload::RealDriver& real) {
                           return real.cuMemAlloc != nullptr ? real.cuMemAlloc(dptr, bytesize)
                                                             : CUDA_ERROR_NOT_SUPPORTED;
                         }),
      "cuMemAlloc");
}

// Counted as the pitch the driver rounds rows to (512 bytes, as cuMemAllocPitch_v2 does), then
// corrected to the pitch it returned.
GSHARE_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch,
                                       unsigned int WidthInBytes, unsigned int Height,
                                       unsigned int ElementSizeBytes) {
  if (pPitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t estimate = (uint64_t{WidthInBytes} + 511) / 512 * 512 * Height;
  const CUresult r = CountedLegacyAlloc(estimate, dptr, [&](const gshare::preload::RealDriver& real) {
    return real.cuMemAllocPitch != nullptr
               ? real.cuMemAllocPitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes)
               : CUDA_ERROR_NOT_SUPPORTED;
  });
  if (r != CUDA_SUCCESS) return r;
  const uint64_t actual = uint64_t{*pPitch} * Height;
  if (actual == estimate) return r;
  VgpuMemory* mem = Runtime::Get().memory();
  const auto entry = ExternalTracker::Get().Take(*dptr, ExternalKind::kLegacy);
  if (actual < estimate) {
    mem->UntrackExternal(ExternalKind::kLegacy, estimate - actual);
  } else if (mem->TrackExternal(ExternalKind::kLegacy, actual - estimate) != CUDA_SUCCESS) {
    (void)Runtime::Get().real().cuMemFree(*dptr);  // the driver's pitch does not fit the quota
    mem->UntrackExternal(ExternalKind::kLegacy, estimate);
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (entry) ExternalTracker::Get().Add(*dptr, {ExternalKind::kLegacy, actual});
  return r;
}

GSHARE_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  Runtime* rt = nullptr;
  VgpuMemory* mem = nullptr;
  if (const CUresult r = AccessMemory(&rt, &mem); r != CUDA_SUCCESS) return r;
  if (rt->real().cuMemFree == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const auto entry = ExternalTracker::Get().Take(dptr, ExternalKind::kLegacy);
  const CUresult r = rt->real().cuMemFree(dptr);
  if (!entry) return r;
  if (r == CUDA_SUCCESS) {
    mem->UntrackExternal(entry->kind, entry->bytes);
  } else {
    ExternalTracker::Get().Add(dptr, *entry);
  }
  return r;
}

}  // extern "C"
