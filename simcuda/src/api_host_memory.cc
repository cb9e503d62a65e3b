// Entry points: page-locked host memory (plain host memory in simcuda: copies from any host
// memory run at the link bandwidth) and registration of the program's own memory.
#include "allocations.h"
#include "api.h"
#include "context.h"
#include "driver.h"

namespace {

bool IsHostKind(simcuda::MemKind k) {
  return k == simcuda::MemKind::kHost || k == simcuda::MemKind::kHostRegistered;
}

}  // namespace

extern "C" {

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  constexpr unsigned kKnown = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if ((Flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  return simcuda::AllocateHostMemory(ctx, bytesize, Flags, pp);
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return cuMemHostAlloc(pp, bytesize, 0); }

CUresult cuMemFreeHost(void* p) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return simcuda::FreeHostMemory(reinterpret_cast<uintptr_t>(p));
}

CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  if (p == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t base = reinterpret_cast<uintptr_t>(p);
  simcuda::AllocationTable& table = simcuda::AllocationTable::Instance();
  if (table.Find(base) || table.Find(base + bytesize - 1)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  simcuda::Allocation a;
  a.base = base;
  a.size = bytesize;
  a.kind = simcuda::MemKind::kHostRegistered;
  a.device = ctx->device;
  a.ctx = ctx;
  a.flags = Flags;
  a.buffer_id = table.NextBufferId();
  table.Insert(a);
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return cuMemHostRegister_v2(p, bytesize, Flags);
}

CUresult cuMemHostUnregister(void* p) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  uintptr_t base = reinterpret_cast<uintptr_t>(p);
  simcuda::AllocationTable& table = simcuda::AllocationTable::Instance();
  std::optional<simcuda::Allocation> a = table.Find(base);
  if (!a || a->base != base || a->kind != simcuda::MemKind::kHostRegistered) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  table.EraseExact(base);
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  std::optional<simcuda::Allocation> a =
      simcuda::AllocationTable::Instance().Find(reinterpret_cast<uintptr_t>(p));
  if (!a || !IsHostKind(a->kind)) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: the same address
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  std::optional<simcuda::Allocation> a =
      simcuda::AllocationTable::Instance().Find(reinterpret_cast<uintptr_t>(p));
  if (!a || a->kind != simcuda::MemKind::kHost) return CUDA_ERROR_INVALID_VALUE;
  *pFlags = a->flags;
  return CUDA_SUCCESS;
}

}  // extern "C"
