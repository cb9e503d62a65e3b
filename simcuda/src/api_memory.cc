// Entry points: device memory allocation and queries (cuMemAlloc, cuMemAllocPitch, cuMemFree,
// cuMemGetInfo, cuMemGetAddressRange, cuMemAllocManaged).
#include "allocations.h"
#include "api.h"
#include "context.h"
#include "driver.h"

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
