// Entry points: device memory allocation and queries (cuMemAlloc, cuMemAllocPitch, cuMemFree,
// cuMemGetInfo, cuMemGetAddressRange, cuMemAllocManaged), in their current (_v2) form and the
// v1 form a 64-bit driver still exports for CUDA 2.x callers (32-bit CUdeviceptr_v1 and sizes:
// their memory is mapped below 2 GiB so its address fits, and sizes beyond 4 GiB read as
// UINT_MAX), reached by dlsym("cuMemAlloc") or cuGetProcAddress with a cudaVersion before 3020.
#include <limits>

#include "allocations.h"
#include "api.h"
#include "context.h"
#include "driver.h"
#include "stream.h"

namespace {

// Device memory may still be in use by queued work: drain the owner's streams before unmapping.
void DrainOwner(uintptr_t ptr) {
  std::optional<simcuda::Allocation> a = simcuda::AllocationTable::Instance().Find(ptr);
  if (a && a->ctx != nullptr && simcuda::IsLiveContext(a->ctx)) simcuda::SynchronizeContext(a->ctx);
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  simcuda::WaitIfLocked();
  return simcuda::AllocateDeviceMemory(ctx, bytesize, simcuda::MemKind::kDevice, 0, dptr);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  if (pPitch == nullptr || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) return CUDA_ERROR_INVALID_VALUE;
  size_t pitch = (WidthInBytes + 511) / 512 * 512;
  CUresult r = cuMemAlloc_v2(dptr, pitch * Height);
  if (r == CUDA_SUCCESS) *pPitch = pitch;
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (dptr == 0) return CUDA_SUCCESS;
  simcuda::WaitIfLocked();
  DrainOwner(dptr);
  return simcuda::FreeDeviceMemory(dptr);
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  simcuda::WaitIfLocked();
  return simcuda::AllocateDeviceMemory(ctx, bytesize, simcuda::MemKind::kManaged, flags, dptr);
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  const simcuda::Registry& reg = *simcuda::Driver()->registry;
  uint64_t cap = reg.Capacity(ctx->device);
  uint64_t used = reg.Used(ctx->device);
  *total = cap;
  *free = used >= cap ? 0 : cap - used;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  simcuda::WaitIfLocked();
  CUdeviceptr p = 0;
  const CUresult r = simcuda::AllocateDeviceMemory(ctx, bytesize, simcuda::MemKind::kDevice, 0, &p,
                                                   -1, nullptr, /*low_address=*/true);
  if (r != CUDA_SUCCESS) return r;
  if (p > std::numeric_limits<CUdeviceptr_v1>::max()) {  // MAP_32BIT not honoured
    (void)simcuda::FreeDeviceMemory(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *dptr = static_cast<CUdeviceptr_v1>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes) {
  if (pPitch == nullptr || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t pitch = (uint64_t{WidthInBytes} + 511) / 512 * 512;
  if (pitch * Height > std::numeric_limits<unsigned int>::max()) return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = cuMemAlloc(dptr, static_cast<unsigned int>(pitch * Height));
  if (r == CUDA_SUCCESS) *pPitch = static_cast<unsigned int>(pitch);
  return r;
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) { return cuMemFree_v2(dptr); }

CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t f = 0;
  size_t t = 0;
  const CUresult r = cuMemGetInfo_v2(&f, &t);
  if (r != CUDA_SUCCESS) return r;
  constexpr size_t kMax = std::numeric_limits<unsigned int>::max();
  *free = static_cast<unsigned int>(f > kMax ? kMax : f);
  *total = static_cast<unsigned int>(t > kMax ? kMax : t);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t b = 0;
  const CUresult r = cuDeviceTotalMem_v2(&b, dev);
  if (r != CUDA_SUCCESS) return r;
  constexpr size_t kMax = std::numeric_limits<unsigned int>::max();
  *bytes = static_cast<unsigned int>(b > kMax ? kMax : b);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr_v1* pbase, unsigned int* psize, CUdeviceptr_v1 dptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult r = cuMemGetAddressRange_v2(&base, &size, dptr);
  if (r != CUDA_SUCCESS) return r;
  // A range that a 32-bit answer cannot describe (it was not allocated through a v1 call).
  if (base > std::numeric_limits<CUdeviceptr_v1>::max() ||
      size > std::numeric_limits<unsigned int>::max()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (pbase != nullptr) *pbase = static_cast<CUdeviceptr_v1>(base);
  if (psize != nullptr) *psize = static_cast<unsigned int>(size);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  std::optional<simcuda::Allocation> a = simcuda::AllocationTable::Instance().Find(dptr);
  if (!a || a->kind == simcuda::MemKind::kHost || a->kind == simcuda::MemKind::kHostRegistered) {
    return CUDA_ERROR_NOT_FOUND;
  }
  if (pbase != nullptr) *pbase = a->base;
  if (psize != nullptr) *psize = a->size;
  return CUDA_SUCCESS;
}

}  // extern "C"

// Managed memory is plain host memory in simcuda: prefetches and advice have nothing to do
// beyond validation (prefetches are ordered in their stream as no-ops).
namespace {

CUresult CheckManagedRange(CUdeviceptr ptr, size_t count) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  std::optional<simcuda::Allocation> a = simcuda::AllocationTable::Instance().Find(ptr);
  if (!a || count == 0 || ptr + count > a->base + a->size) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult Prefetch(CUdeviceptr ptr, size_t count, CUstream h, bool per_thread) {
  if (CUresult r = CheckManagedRange(ptr, count); r != CUDA_SUCCESS) return r;
  CUstream_st* s = nullptr;
  if (CUresult r = simcuda::ResolveStream(h, per_thread, &s); r != CUDA_SUCCESS) return r;
  return simcuda::Submit(s, [](uint64_t start) { return start; });
}

}  // namespace

extern "C" {

CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                               CUstream hStream) {
  (void)location;
  (void)flags;
  return Prefetch(devPtr, count, hStream, false);
}
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                    unsigned int flags, CUstream hStream) {
  (void)location;
  (void)flags;
  return Prefetch(devPtr, count, hStream, true);
}
CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  (void)dstDevice;
  return Prefetch(devPtr, count, hStream, false);
}
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  (void)dstDevice;
  return Prefetch(devPtr, count, hStream, true);
}
CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
  (void)advice;
  (void)location;
  return CheckManagedRange(devPtr, count);
}
CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
  (void)advice;
  (void)device;
  return CheckManagedRange(devPtr, count);
}

}  // extern "C"
