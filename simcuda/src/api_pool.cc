// Entry points: stream-ordered allocation (cuMemAllocAsync, cuMemAllocFromPoolAsync,
// cuMemFreeAsync) and basic memory pools. simcuda allocates at the call (which trivially
// respects stream order) and frees in stream order; pools keep statistics but cache nothing,
// so trimming has nothing to do.
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "allocations.h"
#include "api.h"
#include "context.h"
#include "driver.h"
#include "handle_set.h"
#include "stream.h"

struct CUmemPoolHandle_st {
  uint32_t magic;
  int device;
  bool is_default;
  CUmemPoolProps props;
  std::atomic<int> reuse_follow_event{1};
  std::atomic<int> reuse_opportunistic{1};
  std::atomic<int> reuse_internal_deps{1};
  std::atomic<uint64_t> release_threshold{0};
  std::atomic<uint64_t> used{0};
  std::atomic<uint64_t> used_high{0};
};

namespace {

using PoolSet = simcuda::HandleSet<CUmemPoolHandle_st>;
constexpr uint32_t kPoolMagic = 0x504f4f31;  // "POO1"

struct Pools {
  std::mutex mu;
  std::array<CUmemPoolHandle_st*, simcuda::kMaxDevices> defaults{};
  std::array<CUmemPoolHandle_st*, simcuda::kMaxDevices> current{};
  // Destroyed pools: kept (allocations made from them may still name them) and reachable, so a
  // leak checker does not report them. A few objects per destroyed pool, never reused.
  std::vector<CUmemPoolHandle_st*> destroyed;
};

Pools& P() {
  static Pools* p = new Pools();
  return *p;
}

CUmemPoolHandle_st* NewPool(int device, const CUmemPoolProps* props, bool is_default) {
  auto* pool = new CUmemPoolHandle_st();
  pool->magic = kPoolMagic;
  pool->device = device;
  pool->is_default = is_default;
  if (props != nullptr) pool->props = *props;
  pool->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  pool->props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  pool->props.location.id = device;
  PoolSet::Instance().Add(pool);
  return pool;
}

CUmemPoolHandle_st* DefaultPool(int device) {
  Pools& p = P();
  std::lock_guard<std::mutex> lock(p.mu);
  auto& slot = p.defaults[static_cast<size_t>(device)];
  if (slot == nullptr) slot = NewPool(device, nullptr, true);
  return slot;
}

CUmemPoolHandle_st* CurrentPool(int device) {
  CUmemPoolHandle_st* def = DefaultPool(device);
  Pools& p = P();
  std::lock_guard<std::mutex> lock(p.mu);
  auto& cur = p.current[static_cast<size_t>(device)];
  return cur != nullptr ? cur : def;
}

void NoteUsed(CUmemPoolHandle_st* pool, int64_t delta) {
  uint64_t now = pool->used.fetch_add(static_cast<uint64_t>(delta)) + static_cast<uint64_t>(delta);
  uint64_t high = pool->used_high.load();
  while (now > high && !pool->used_high.compare_exchange_weak(high, now)) {
  }
}

CUresult AllocAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream h, bool pt) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = simcuda::ResolveStream(h, pt, &s); r != CUDA_SUCCESS) return r;
  if (s->capture_status.load() != CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (pool == nullptr) pool = CurrentPool(s->ctx->device);
  if (!PoolSet::Instance().Contains(pool)) return CUDA_ERROR_INVALID_HANDLE;
  simcuda::WaitIfLocked();
  CUresult r = simcuda::AllocateDeviceMemory(s->ctx, bytes, simcuda::MemKind::kDevice, 0, dptr, pool->device, pool);
  if (r == CUDA_SUCCESS) NoteUsed(pool, static_cast<int64_t>(simcuda::AccountedBytes(bytes)));
  return r;
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream h, bool pt) {
  CUstream_st* s = nullptr;
  if (CUresult r = simcuda::ResolveStream(h, pt, &s); r != CUDA_SUCCESS) return r;
  std::optional<simcuda::Allocation> a = simcuda::AllocationTable::Instance().Find(dptr);
  if (!a || a->base != dptr || a->kind != simcuda::MemKind::kDevice) return CUDA_ERROR_INVALID_VALUE;
  CUmemoryPool pool = a->pool;
  size_t accounted = a->mapped;
  return simcuda::Submit(s, [dptr, pool, accounted](uint64_t start) {
    if (simcuda::FreeDeviceMemory(dptr) == CUDA_SUCCESS && pool != nullptr && PoolSet::Instance().Contains(pool)) {
      NoteUsed(pool, -static_cast<int64_t>(accounted));
    }
    return start;
  });
}

CUresult CheckPool(CUmemoryPool pool) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return PoolSet::Instance().Contains(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

extern "C" {

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return AllocAsync(dptr, bytesize, nullptr, hStream, false);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return AllocAsync(dptr, bytesize, nullptr, hStream, true);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AllocAsync(dptr, bytesize, pool, hStream, false);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AllocAsync(dptr, bytesize, pool, hStream, true);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return FreeAsync(dptr, hStream, false); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { return FreeAsync(dptr, hStream, true); }

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  *pool_out = DefaultPool(dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  *pool = CurrentPool(dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  if (!PoolSet::Instance().Contains(pool) || pool->device != dev) return CUDA_ERROR_INVALID_VALUE;
  Pools& p = P();
  std::lock_guard<std::mutex> lock(p.mu);
  p.current[static_cast<size_t>(dev)] = pool;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  if (pool == nullptr || poolProps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (CUresult r = simcuda::CheckDevice(poolProps->location.id); r != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *pool = NewPool(poolProps->location.id, poolProps, false);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  if (CUresult r = CheckPool(pool); r != CUDA_SUCCESS) return r;
  if (pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  Pools& p = P();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    for (auto& cur : p.current) {
      if (cur == pool) cur = nullptr;
    }
    p.destroyed.push_back(pool);
  }
  PoolSet::Instance().Remove(pool);
  pool->magic = 0;  // the object is kept: live allocations still name it (MEMPOOL_HANDLE)
  return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  (void)minBytesToKeep;
  return CheckPool(pool);  // nothing is cached
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (CUresult r = CheckPool(pool); r != CUDA_SUCCESS) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: pool->reuse_follow_event = *static_cast<int*>(value); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: pool->reuse_opportunistic = *static_cast<int*>(value); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: pool->reuse_internal_deps = *static_cast<int*>(value); break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: pool->release_threshold = *static_cast<cuuint64_t*>(value); break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (*static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high = pool->used.load();
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (CUresult r = CheckPool(pool); r != CUDA_SUCCESS) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *static_cast<int*>(value) = pool->reuse_follow_event; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *static_cast<int*>(value) = pool->reuse_opportunistic; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *static_cast<int*>(value) = pool->reuse_internal_deps; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *static_cast<cuuint64_t*>(value) = pool->release_threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *static_cast<cuuint64_t*>(value) = pool->used; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *static_cast<cuuint64_t*>(value) = pool->used_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  if (CUresult r = CheckPool(pool); r != CUDA_SUCCESS) return r;
  return map == nullptr && count > 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
  if (CUresult r = CheckPool(memPool); r != CUDA_SUCCESS) return r;
  if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return CUDA_SUCCESS;
}

}  // extern "C"
