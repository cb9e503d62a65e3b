// Memory locations outside the allocator: pools, access queries, advice and prefetches name the
// application's one device by its CUdevice or its ordinal 0 (hooks/device_view.h). A device
// location of either is passed to the driver as the physical GPU the vGPU lives on, another
// device id is CUDA_ERROR_INVALID_DEVICE, host and host-NUMA locations pass unchanged. (The
// allocations themselves — cuMemAllocFromPoolAsync included — are VgpuMemory's, on that GPU.)
// cuMemCreate, cuMemSetAccess and cuMemGetAllocationGranularity map their locations in
// external_hooks.cc and device_hooks.cc.
#include <utility>
#include <vector>

#include "hooks/device_view.h"
#include "hooks/export.h"

using gshare::preload::MapDeviceLocation;
using gshare::preload::RealDriver;
using gshare::preload::Runtime;

namespace {

// The prologue of every hook here: the runtime's status and the real function (null: the error
// to return is in *error).
template <typename Fn>
Fn Real(Fn RealDriver::*member, const Runtime& rt, CUresult* error) {
  *error = rt.status();
  if (*error != CUDA_SUCCESS) return nullptr;
  const Fn fn = rt.real().*member;
  if (fn == nullptr) *error = rt.driver_loaded() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
  return fn;
}

// Calls the real `member` with `args` once `map(rt)` (mapping one of them in place) succeeded.
template <typename Member, typename Map, typename... Args>
CUresult MappedCall(Member RealDriver::*member, Map map, Args&&... args) {
  const Runtime& rt = Runtime::Get();
  CUresult r = CUDA_SUCCESS;
  const auto fn = Real(member, rt, &r);
  if (fn == nullptr) return r;
  if ((r = map(rt)) != CUDA_SUCCESS) return r;
  return fn(std::forward<Args>(args)...);
}

// The location `*loc` (one of `args`; null: nothing to map) mapped, then the real call.
template <typename Member, typename... Args>
CUresult AtLocation(Member RealDriver::*member, CUmemLocation* loc, Args&&... args) {
  return MappedCall(
      member,
      [loc](const Runtime& rt) { return loc != nullptr ? MapDeviceLocation(rt, loc) : CUDA_SUCCESS; },
      std::forward<Args>(args)...);
}

// A CUdevice that may be CU_DEVICE_CPU (the v1 advise and prefetch calls) mapped, then the call.
template <typename Member, typename... Args>
CUresult AtDeviceOrCpu(Member RealDriver::*member, CUdevice* dev, Args&&... args) {
  return MappedCall(
      member, [dev](const Runtime& rt) { return gshare::preload::MapDeviceOrCpu(rt, dev); },
      std::forward<Args>(args)...);
}

// The batched prefetches (all four share one signature): the `numPrefetchLocs` locations copied
// and mapped, then the real call with the copy.
template <typename Fn>
CUresult PrefetchBatch(Fn RealDriver::*member, CUdeviceptr* dptrs, size_t* sizes, size_t count,
                       CUmemLocation* locs, size_t* loc_idxs, size_t num_locs,
                       unsigned long long flags, CUstream stream) {
  const Runtime& rt = Runtime::Get();
  CUresult r = CUDA_SUCCESS;
  const Fn fn = Real(member, rt, &r);
  if (fn == nullptr) return r;
  std::vector<CUmemLocation> mapped;
  if (locs != nullptr && num_locs > 0) {
    r = gshare::preload::MapLocations(rt, locs, num_locs, &mapped,
                                      [](CUmemLocation& l) { return &l; });
    if (r != CUDA_SUCCESS) return r;
    locs = mapped.data();
  }
  return fn(dptrs, sizes, count, locs, loc_idxs, num_locs, flags, stream);
}

}  // namespace

extern "C" {

// Pools.
GSHARE_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  CUmemPoolProps mapped{};
  if (poolProps != nullptr) mapped = *poolProps;
  return AtLocation(&RealDriver::cuMemPoolCreate, poolProps != nullptr ? &mapped.location : nullptr,
                    pool, poolProps != nullptr ? &mapped : nullptr);
}

GSHARE_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map,
                                          size_t count) {
  const Runtime& rt = Runtime::Get();
  CUresult r = CUDA_SUCCESS;
  const auto fn = Real(&RealDriver::cuMemPoolSetAccess, rt, &r);
  if (fn == nullptr) return r;
  if (map == nullptr || count == 0) return fn(pool, map, count);
  std::vector<CUmemAccessDesc> mapped;
  if ((r = gshare::preload::MapAccessDescs(rt, map, count, &mapped)) != CUDA_SUCCESS) return r;
  return fn(pool, mapped.data(), count);
}

GSHARE_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool,
                                          CUmemLocation* location) {
  CUmemLocation mapped{};
  if (location != nullptr) mapped = *location;
  return AtLocation(&RealDriver::cuMemPoolGetAccess, location != nullptr ? &mapped : nullptr,
                    flags, memPool, location != nullptr ? &mapped : nullptr);
}

GSHARE_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location,
                                              CUmemAllocationType type) {
  CUmemLocation mapped{};
  if (location != nullptr) mapped = *location;
  return AtLocation(&RealDriver::cuMemGetDefaultMemPool, location != nullptr ? &mapped : nullptr,
                    pool_out, location != nullptr ? &mapped : nullptr, type);
}

GSHARE_EXPORT CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location,
                                       CUmemAllocationType type) {
  CUmemLocation mapped{};
  if (location != nullptr) mapped = *location;
  return AtLocation(&RealDriver::cuMemGetMemPool, location != nullptr ? &mapped : nullptr, pool,
                    location != nullptr ? &mapped : nullptr, type);
}

GSHARE_EXPORT CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type,
                                       CUmemoryPool pool) {
  CUmemLocation mapped{};
  if (location != nullptr) mapped = *location;
  return AtLocation(&RealDriver::cuMemSetMemPool, location != nullptr ? &mapped : nullptr,
                    location != nullptr ? &mapped : nullptr, type, pool);
}

// VMM access query.
GSHARE_EXPORT CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location,
                                      CUdeviceptr ptr) {
  CUmemLocation mapped{};
  if (location != nullptr) mapped = *location;
  return AtLocation(&RealDriver::cuMemGetAccess, location != nullptr ? &mapped : nullptr, flags,
                    location != nullptr ? &mapped : nullptr, ptr);
}

// Advice and prefetches (managed memory).
GSHARE_EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                   CUdevice device) {
  return AtDeviceOrCpu(&RealDriver::cuMemAdvise, &device, devPtr, count, advice, device);
}
GSHARE_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                      CUmemLocation location) {
  return AtLocation(&RealDriver::cuMemAdvise_v2, &location, devPtr, count, advice, location);
}
GSHARE_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                          CUstream hStream) {
  return AtDeviceOrCpu(&RealDriver::cuMemPrefetchAsync, &dstDevice, devPtr, count, dstDevice,
                       hStream);
}
GSHARE_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count,
                                               CUdevice dstDevice, CUstream hStream) {
  return AtDeviceOrCpu(&RealDriver::cuMemPrefetchAsync_ptsz, &dstDevice, devPtr, count, dstDevice,
                       hStream);
}
GSHARE_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count,
                                             CUmemLocation location, unsigned int flags,
                                             CUstream hStream) {
  return AtLocation(&RealDriver::cuMemPrefetchAsync_v2, &location, devPtr, count, location, flags,
                    hStream);
}
GSHARE_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
                                                  CUmemLocation location, unsigned int flags,
                                                  CUstream hStream) {
  return AtLocation(&RealDriver::cuMemPrefetchAsync_v2_ptsz, &location, devPtr, count, location,
                    flags, hStream);
}

GSHARE_EXPORT CUresult cuMemPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                               CUmemLocation* prefetchLocs,
                                               size_t* prefetchLocIdxs, size_t numPrefetchLocs,
                                               unsigned long long flags, CUstream hStream) {
  return PrefetchBatch(&RealDriver::cuMemPrefetchBatchAsync, dptrs, sizes, count, prefetchLocs,
                       prefetchLocIdxs, numPrefetchLocs, flags, hStream);
}
GSHARE_EXPORT CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes,
                                                    size_t count, CUmemLocation* prefetchLocs,
                                                    size_t* prefetchLocIdxs,
                                                    size_t numPrefetchLocs,
                                                    unsigned long long flags, CUstream hStream) {
  return PrefetchBatch(&RealDriver::cuMemPrefetchBatchAsync_ptsz, dptrs, sizes, count,
                       prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream);
}
GSHARE_EXPORT CUresult cuMemDiscardAndPrefetchBatchAsync(
    CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
    size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  return PrefetchBatch(&RealDriver::cuMemDiscardAndPrefetchBatchAsync, dptrs, sizes, count,
                       prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream);
}
GSHARE_EXPORT CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(
    CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
    size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  return PrefetchBatch(&RealDriver::cuMemDiscardAndPrefetchBatchAsync_ptsz, dptrs, sizes, count,
                       prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream);
}

}  // extern "C"
