// The address map and plain device-memory allocation (see allocations.h).
#include "allocations.h"

#include <sys/mman.h>

#include "context.h"
#include "driver.h"
#include "log.h"
#include "mps_client.h"

namespace simcuda {

AllocationTable& AllocationTable::Instance() {
  static AllocationTable* table = new AllocationTable();
  return *table;
}

unsigned long long AllocationTable::NextBufferId() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_id_++;
}

void AllocationTable::Insert(const Allocation& a) {
  std::lock_guard<std::mutex> lock(mu_);
  by_base_[a.base] = a;
}

std::optional<Allocation> AllocationTable::EraseExact(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return std::nullopt;
  Allocation a = it->second;
  by_base_.erase(it);
  return a;
}

std::optional<Allocation> AllocationTable::Find(uintptr_t ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_base_.upper_bound(ptr);
  if (it == by_base_.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  size_t extent = a.size == 0 ? 1 : a.size;
  if (ptr >= a.base && ptr - a.base < extent) return a;
  return std::nullopt;
}

std::vector<Allocation> AllocationTable::Select(const std::function<bool(const Allocation&)>& pred) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Allocation> out;
  for (const auto& [base, a] : by_base_) {
    if (pred(a)) out.push_back(a);
  }
  return out;
}

bool AllocationTable::Update(uintptr_t base, const std::function<void(Allocation&)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return false;
  fn(it->second);
  return true;
}

size_t AccountedBytes(size_t bytes) {
  constexpr size_t kPage = 4096;
  return (bytes + kPage - 1) / kPage * kPage;
}

namespace {
// Maps `bytes` of anonymous memory and records it.
void* MapAndRecord(CUctx_st* ctx, size_t bytes, size_t mapped, MemKind kind, unsigned flags, int device,
                   CUmemoryPool pool, bool low_address = false) {
  int populate = kind != MemKind::kHost && Driver()->config.populate ? MAP_POPULATE : 0;
  const int low = low_address ? MAP_32BIT : 0;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | populate | low, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  Allocation a;
  a.base = reinterpret_cast<uintptr_t>(p);
  a.size = bytes;
  a.mapped = mapped;
  a.kind = kind;
  a.device = device;
  a.ctx = ctx;
  a.flags = flags;
  a.pool = pool;
  a.buffer_id = AllocationTable::Instance().NextBufferId();
  AllocationTable::Instance().Insert(a);
  return p;
}
}  // namespace

CUresult AllocateDeviceMemory(CUctx_st* ctx, size_t bytes, MemKind kind, unsigned flags,
                              CUdeviceptr* out, int device, CUmemoryPool pool, bool low_address) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0) device = ctx->device;
  if (CUresult r = MpsCheck(ctx); r != CUDA_SUCCESS) return r;
  DriverState* d = Driver();
  size_t accounted = AccountedBytes(bytes);
  if (!d->registry->Reserve(device, accounted)) {
    return d->registry->detached() ? CUDA_ERROR_DEINITIALIZED : CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* p = MapAndRecord(ctx, bytes, accounted, kind, flags, device, pool, low_address);
  if (p == nullptr) {
    d->registry->Release(device, accounted);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *out = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult AllocateHostMemory(CUctx_st* ctx, size_t bytes, unsigned flags, void** out) {
  if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = MapAndRecord(ctx, bytes, AccountedBytes(bytes), MemKind::kHost, flags, ctx->device, nullptr);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = p;
  return CUDA_SUCCESS;
}

namespace {
void ReleaseMapping(const Allocation& a) {
  munmap(reinterpret_cast<void*>(a.base), a.mapped);
  if (a.kind == MemKind::kDevice || a.kind == MemKind::kManaged) {
    Driver()->registry->Release(a.device, a.mapped);
  }
}
}  // namespace

CUresult FreeDeviceMemory(uintptr_t ptr) {
  AllocationTable& table = AllocationTable::Instance();
  std::optional<Allocation> a = table.Find(ptr);
  if (!a || a->base != ptr || (a->kind != MemKind::kDevice && a->kind != MemKind::kManaged)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!table.EraseExact(ptr)) return CUDA_ERROR_INVALID_VALUE;  // lost a race with another free
  ReleaseMapping(*a);
  return CUDA_SUCCESS;
}

CUresult FreeHostMemory(uintptr_t ptr) {
  AllocationTable& table = AllocationTable::Instance();
  std::optional<Allocation> a = table.Find(ptr);
  if (!a || a->base != ptr || a->kind != MemKind::kHost) return CUDA_ERROR_INVALID_VALUE;
  if (!table.EraseExact(ptr)) return CUDA_ERROR_INVALID_VALUE;
  ReleaseMapping(*a);
  return CUDA_SUCCESS;
}

void FreeContextMemory(CUctx_st* ctx) {
  AllocationTable& table = AllocationTable::Instance();
  for (const Allocation& a : table.Select([ctx](const Allocation& x) {
         return x.ctx == ctx && (x.kind == MemKind::kDevice || x.kind == MemKind::kManaged ||
                                 x.kind == MemKind::kHost);
       })) {
    if (table.EraseExact(a.base)) ReleaseMapping(a);
  }
}

}  // namespace simcuda
