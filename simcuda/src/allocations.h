// The process's address map: every range simcuda handed out (device allocations, host
// allocations, registered host memory, managed memory, mapped VMM ranges), keyed by base
// address, so pointers can be classified (cuPointerGetAttribute, copy directions) and ranges
// found (cuMemGetAddressRange). Thread-safe (one mutex); process-lifetime singleton.
#ifndef SIMCUDA_SRC_ALLOCATIONS_H_
#define SIMCUDA_SRC_ALLOCATIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "api.h"

namespace simcuda {

enum class MemKind {
  kDevice,          // cuMemAlloc / cuMemAllocPitch / stream-ordered: anonymous mapping, accounted
  kManaged,         // cuMemAllocManaged: anonymous mapping, accounted
  kHost,            // cuMemAllocHost / cuMemHostAlloc: page-locked host memory (plain here)
  kHostRegistered,  // cuMemHostRegister: the program's own memory
  kVmm,             // a cuMemMap'ed range of VMM physical memory
};

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;          // bytes requested
  size_t mapped = 0;        // bytes mapped (page-rounded) for kDevice/kManaged/kHost
  MemKind kind = MemKind::kDevice;
  int device = 0;
  CUctx_st* ctx = nullptr;
  unsigned long long buffer_id = 0;
  unsigned flags = 0;       // host alloc flags / managed attach flags / kVmm: CUmemAccess_flags
  uint32_t access_devices = 0;  // kVmm: bit d set when device d may read the mapping
  CUmemoryPool pool = nullptr;  // stream-ordered allocations
};

class AllocationTable {
 public:
  static AllocationTable& Instance();
  unsigned long long NextBufferId();
  void Insert(const Allocation& a);
  // Removes the allocation starting exactly at `base`.
  std::optional<Allocation> EraseExact(uintptr_t base);
  // The allocation containing `ptr`.
  std::optional<Allocation> Find(uintptr_t ptr);
  // Every allocation (copy) matching `pred`.
  std::vector<Allocation> Select(const std::function<bool(const Allocation&)>& pred);
  // Applies `fn` to the allocation at `base` under the lock; false if none.
  bool Update(uintptr_t base, const std::function<void(Allocation&)>& fn);

 private:
  std::mutex mu_;
  std::map<uintptr_t, Allocation> by_base_;
  unsigned long long next_id_ = 1;
};

// Allocates `bytes` of device (or managed) memory owned by `ctx` on `device` (-1: ctx's
// device): reserves capacity in the registry, then maps. OUT_OF_MEMORY when the device is full.
// `low_address`: within the first 2 GiB of the address space (MAP_32BIT), so the pointer fits
// the v1 entry points' 32-bit CUdeviceptr_v1; OUT_OF_MEMORY when that range is full.
CUresult AllocateDeviceMemory(CUctx_st* ctx, size_t bytes, MemKind kind, unsigned flags,
                              CUdeviceptr* out, int device = -1, CUmemoryPool pool = nullptr,
                              bool low_address = false);
// Allocates page-locked host memory (plain here) owned by `ctx` (kind kHost).
CUresult AllocateHostMemory(CUctx_st* ctx, size_t bytes, unsigned flags, void** out);
// Frees a kHost allocation at exactly `ptr`.
CUresult FreeHostMemory(uintptr_t ptr);
// Frees a kDevice/kManaged allocation at exactly `ptr`; INVALID_VALUE if there is none.
CUresult FreeDeviceMemory(uintptr_t ptr);
// Frees every device/managed/host allocation owned by `ctx` (context teardown).
void FreeContextMemory(CUctx_st* ctx);
// Bytes of device capacity a request of `bytes` consumes (page-rounded).
size_t AccountedBytes(size_t bytes);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_ALLOCATIONS_H_
