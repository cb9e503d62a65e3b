// VMM: reservations, memfd-backed physical memory, mappings and access (see vmm.h).
#include "vmm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "allocations.h"
#include "driver.h"
#include "log.h"

namespace simcuda {
namespace {

// Physical memory behind one CUmemGenericAllocationHandle.
struct Physical {
  int fd = -1;
  size_t size = 0;
  int device = 0;              // -1: host location (not accounted)
  bool accounted = false;      // this process reserved `size` on `device`
  bool recycled = false;       // the memfd came from the pool (already populated)
  bool needs_poison = false;   // recycled and not mapped yet: poison its pages at the first map
  bool poolable = true;        // false for memory shared with other processes (export/import)
  int handle_refs = 1;         // cuMemCreate/Import/Retain minus cuMemRelease
  int mappings = 0;
  CUmemAllocationProp prop{};
  std::vector<unsigned char> saved;  // contents while checkpointed
  bool checkpointed = false;
};

struct Mapping {
  size_t size;
  size_t offset;
  CUmemGenericAllocationHandle handle;
  std::array<unsigned char, kMaxDevices> access{};  // CUmemAccess_flags per device
};

struct State {
  std::mutex mu;
  std::map<uintptr_t, size_t> reservations;  // base -> size
  std::map<CUmemGenericAllocationHandle, std::shared_ptr<Physical>> handles;
  std::map<uintptr_t, Mapping> mappings;  // base -> mapping
  std::multimap<size_t, int> pool;        // size -> populated memfd
  size_t pool_bytes = 0;
  size_t pool_limit = 0;
  CUmemGenericAllocationHandle next_handle = 1;
};

State& S() {
  static State* s = [] {
    auto* st = new State();
    st->pool_limit = 2ull << 30;
    if (const char* env = std::getenv("SIMCUDA_VMM_POOL_BYTES"); env != nullptr) {
      st->pool_limit = std::strtoull(env, nullptr, 0);
    }
    return st;
  }();
  return *s;
}

bool Aligned(uint64_t v) { return v % kVmmGranularity == 0; }

// The reservation containing [ptr, ptr + size), if any. REQUIRES: mu held.
bool InReservation(State& s, uintptr_t ptr, size_t size) {
  auto it = s.reservations.upper_bound(ptr);
  if (it == s.reservations.begin()) return false;
  --it;
  return ptr >= it->first && ptr + size <= it->first + it->second;
}

void* ReserveAt(uintptr_t addr, size_t size) {
  return mmap(reinterpret_cast<void*>(addr), size, PROT_NONE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (addr != 0 ? MAP_FIXED : 0), -1, 0);
}

int NewMemfd(size_t size, int device) {
  char name[32];
  std::snprintf(name, sizeof name, "simcuda-dev%d", device);
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A memfd of `size` bytes: from the pool if one is there. REQUIRES: mu held.
int TakeMemfd(State& s, size_t size, int device, bool* recycled) {
  auto it = s.pool.find(size);
  if (it != s.pool.end()) {
    int fd = it->second;
    s.pool.erase(it);
    s.pool_bytes -= size;
    *recycled = true;
    return fd;
  }
  *recycled = false;
  return NewMemfd(size, device);
}

// Drops physical memory whose last reference went. REQUIRES: mu held.
void MaybeFree(State& s, CUmemGenericAllocationHandle h) {
  auto it = s.handles.find(h);
  if (it == s.handles.end()) return;
  Physical& p = *it->second;
  if (p.handle_refs > 0 || p.mappings > 0) return;
  if (p.accounted) Driver()->registry->Release(p.device, p.size);
  if (p.fd >= 0) {
    if (p.poolable && s.pool_bytes + p.size <= s.pool_limit) {
      s.pool.emplace(p.size, p.fd);
      s.pool_bytes += p.size;
    } else {
      close(p.fd);
    }
  }
  s.handles.erase(it);
}

// The mapping containing `ptr`, or end(). REQUIRES: mu held.
std::map<uintptr_t, Mapping>::iterator FindMapping(State& s, uintptr_t ptr) {
  auto it = s.mappings.upper_bound(ptr);
  if (it == s.mappings.begin()) return s.mappings.end();
  --it;
  return ptr < it->first + it->second.size ? it : s.mappings.end();
}

// mmap protection for a mapping's granted access.
int ProtFor(const Mapping& m) {
  unsigned any = 0;
  for (unsigned char a : m.access) any |= a;
  if ((any & CU_MEM_ACCESS_FLAGS_PROT_READWRITE) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return PROT_READ | PROT_WRITE;
  return (any & CU_MEM_ACCESS_FLAGS_PROT_READ) != 0 ? PROT_READ : PROT_NONE;
}

// Maps `m` of physical `p` at `base` with its recorded access. REQUIRES: mu held.
bool MapRange(uintptr_t base, const Mapping& m, Physical& p, bool poison) {
  int prot = ProtFor(m);
  int populate = p.recycled || Driver()->config.populate ? MAP_POPULATE : 0;
  void* r = mmap(reinterpret_cast<void*>(base), m.size, poison ? PROT_READ | PROT_WRITE : prot,
                 MAP_SHARED | MAP_FIXED | populate, p.fd, static_cast<off_t>(m.offset));
  if (r == MAP_FAILED) return false;
  if (poison) {
    for (size_t off = 0; off < m.size; off += 4096) {
      std::memcpy(reinterpret_cast<void*>(base + off), &kVmmPoisonWord, sizeof kVmmPoisonWord);
    }
    mprotect(reinterpret_cast<void*>(base), m.size, prot);
  }
  return true;
}

void UpdateAllocationAccess(uintptr_t base, const Mapping& m) {
  unsigned any = 0;
  uint32_t devices = 0;
  for (size_t d = 0; d < m.access.size(); ++d) {
    any |= m.access[d];
    if ((m.access[d] & CU_MEM_ACCESS_FLAGS_PROT_READ) != 0) devices |= uint32_t{1} << d;
  }
  AllocationTable::Instance().Update(base, [any, devices](Allocation& a) {
    a.flags = any;
    a.access_devices = devices;
  });
}

}  // namespace

CUresult VmmAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr) {
  if (ptr == nullptr || size == 0 || !Aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  if (alignment == 0) alignment = kVmmGranularity;
  if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  void* base = MAP_FAILED;
  if (addr != 0 && addr % alignment == 0) {
    base = mmap(reinterpret_cast<void*>(addr), size, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  }
  if (base == MAP_FAILED) {
    // Over-reserve and trim to the alignment.
    size_t span = size + alignment;
    void* raw = ReserveAt(0, span);
    if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    uintptr_t aligned = (start + alignment - 1) / alignment * alignment;
    if (aligned > start) munmap(raw, aligned - start);
    uintptr_t end = start + span;
    if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
    base = reinterpret_cast<void*>(aligned);
  }
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.reservations[reinterpret_cast<uintptr_t>(base)] = size;
  *ptr = reinterpret_cast<CUdeviceptr>(base);
  return CUDA_SUCCESS;
}

CUresult VmmAddressFree(CUdeviceptr ptr, size_t size) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.reservations.find(ptr);
  if (it == s.reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = s.mappings.lower_bound(ptr);
  if (m != s.mappings.end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;  // still mapped
  munmap(reinterpret_cast<void*>(ptr), size);
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult VmmCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop) {
  if (handle == nullptr || prop == nullptr || size == 0 || !Aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  int device = -1;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    if (CUresult r = CheckDevice(prop->location.id); r != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
    device = prop->location.id;
  } else if (prop->location.type != CU_MEM_LOCATION_TYPE_HOST &&
             prop->location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  constexpr unsigned kSupportedHandles = CU_MEM_HANDLE_TYPE_NONE | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  if ((prop->requestedHandleTypes & ~kSupportedHandles) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (device >= 0 && !Driver()->registry->Reserve(device, size)) {
    return Driver()->registry->detached() ? CUDA_ERROR_DEINITIALIZED : CUDA_ERROR_OUT_OF_MEMORY;
  }
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto p = std::make_shared<Physical>();
  // Exportable memory may be shared with other processes: never recycled, never pooled, and
  // its memfd is named after its device (importers read the device from the name).
  p->poolable = (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0;
  if (p->poolable) {
    p->fd = TakeMemfd(s, size, device, &p->recycled);
  } else {
    p->fd = NewMemfd(size, device);
  }
  p->needs_poison = p->recycled;
  if (p->fd < 0) {
    if (device >= 0) Driver()->registry->Release(device, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  p->size = size;
  p->device = device;
  p->accounted = device >= 0;
  p->prop = *prop;
  CUmemGenericAllocationHandle h = s.next_handle++;
  s.handles[h] = std::move(p);
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult VmmRelease(CUmemGenericAllocationHandle handle) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.handles.find(handle);
  if (it == s.handles.end() || it->second->handle_refs <= 0) return CUDA_ERROR_INVALID_VALUE;
  --it->second->handle_refs;
  MaybeFree(s, handle);
  return CUDA_SUCCESS;
}

CUresult VmmMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle) {
  if (size == 0 || !Aligned(ptr) || !Aligned(size) || !Aligned(offset)) return CUDA_ERROR_INVALID_VALUE;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto h = s.handles.find(handle);
  if (h == s.handles.end() || h->second->handle_refs <= 0) return CUDA_ERROR_INVALID_HANDLE;
  Physical& p = *h->second;
  if (offset + size > p.size) return CUDA_ERROR_INVALID_VALUE;
  if (!InReservation(s, ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  auto next = s.mappings.lower_bound(ptr);
  if (next != s.mappings.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  if (next != s.mappings.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
  }
  Mapping m{size, offset, handle, {}};
  if (!MapRange(ptr, m, p, p.needs_poison)) return CUDA_ERROR_OUT_OF_MEMORY;
  p.needs_poison = false;
  ++p.mappings;
  s.mappings[ptr] = m;
  Allocation a;
  a.base = ptr;
  a.size = size;
  a.kind = MemKind::kVmm;
  a.device = p.device < 0 ? 0 : p.device;
  a.buffer_id = AllocationTable::Instance().NextBufferId();
  a.flags = 0;
  AllocationTable::Instance().Insert(a);
  return CUDA_SUCCESS;
}

CUresult VmmUnmap(CUdeviceptr ptr, size_t size) {
  if (size == 0 || !Aligned(ptr) || !Aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  // The range must consist of whole mappings.
  uintptr_t at = ptr;
  while (at < ptr + size) {
    auto it = s.mappings.find(at);
    if (it == s.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
    at += it->second.size;
  }
  if (at != ptr + size) return CUDA_ERROR_INVALID_VALUE;
  at = ptr;
  while (at < ptr + size) {
    auto it = s.mappings.find(at);
    Mapping m = it->second;
    s.mappings.erase(it);
    ReserveAt(at, m.size);
    AllocationTable::Instance().EraseExact(at);
    auto h = s.handles.find(m.handle);
    if (h != s.handles.end()) {
      --h->second->mappings;
      MaybeFree(s, m.handle);
    }
    at += m.size;
  }
  return CUDA_SUCCESS;
}

CUresult VmmSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (CheckDevice(desc[i].location.id) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  }
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  uintptr_t at = ptr;
  std::vector<uintptr_t> bases;
  while (at < ptr + size) {
    auto it = FindMapping(s, at);
    if (it == s.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
    bases.push_back(it->first);
    at = it->first + it->second.size;
  }
  for (uintptr_t base : bases) {
    Mapping& m = s.mappings[base];
    for (size_t i = 0; i < count; ++i) {
      m.access[static_cast<size_t>(desc[i].location.id)] = static_cast<unsigned char>(desc[i].flags);
    }
    if (mprotect(reinterpret_cast<void*>(base), m.size, ProtFor(m)) != 0) return CUDA_ERROR_INVALID_VALUE;
    UpdateAllocationAccess(base, m);
  }
  return CUDA_SUCCESS;
}

CUresult VmmGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  if (flags == nullptr || location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CheckDevice(location->id) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = FindMapping(s, ptr);
  if (it == s.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  *flags = it->second.access[static_cast<size_t>(location->id)];
  return CUDA_SUCCESS;
}

CUresult VmmRetainHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t ptr = reinterpret_cast<uintptr_t>(addr);
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = FindMapping(s, ptr);
  if (it == s.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  auto h = s.handles.find(it->second.handle);
  if (h == s.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  ++h->second->handle_refs;
  *handle = it->second.handle;
  return CUDA_SUCCESS;
}

CUresult VmmGetProperties(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto h = s.handles.find(handle);
  if (h == s.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  *prop = h->second->prop;
  return CUDA_SUCCESS;
}

CUresult VmmExport(void* shareable, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType type) {
  if (shareable == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto h = s.handles.find(handle);
  if (h == s.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  if ((h->second->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int fd = fcntl(h->second->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}

CUresult VmmImport(CUmemGenericAllocationHandle* handle, void* os_handle, CUmemAllocationHandleType type) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  int src = static_cast<int>(reinterpret_cast<intptr_t>(os_handle));
  off_t size = lseek(src, 0, SEEK_END);
  if (size <= 0 || !Aligned(static_cast<uint64_t>(size))) return CUDA_ERROR_INVALID_VALUE;
  // The exporter's device is in the memfd's name ("memfd:simcuda-devN").
  char link[64], target[256] = {0};
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", src);
  ssize_t n = readlink(link, target, sizeof target - 1);
  int device = 0;
  if (n > 0) {
    const char* tag = std::strstr(target, "simcuda-dev");
    if (tag != nullptr) device = std::atoi(tag + std::strlen("simcuda-dev"));
  }
  int fd = fcntl(src, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
  auto p = std::make_shared<Physical>();
  p->fd = fd;
  p->size = static_cast<size_t>(size);
  p->device = device;
  p->accounted = false;  // the exporter accounts it
  p->poolable = false;
  p->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p->prop.location.type = device >= 0 ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST;
  p->prop.location.id = device < 0 ? 0 : device;
  p->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  CUmemGenericAllocationHandle h = s.next_handle++;
  s.handles[h] = std::move(p);
  *handle = h;
  return CUDA_SUCCESS;
}

int64_t VmmCheckpoint() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  int64_t moved = 0;
  for (auto& [h, p] : s.handles) {
    if (p->checkpointed || p->fd < 0) continue;
    p->saved.resize(p->size);
    void* src = mmap(nullptr, p->size, PROT_READ, MAP_SHARED, p->fd, 0);
    if (src == MAP_FAILED) return -1;
    std::memcpy(p->saved.data(), src, p->size);
    munmap(src, p->size);
    close(p->fd);
    p->fd = -1;
    if (p->accounted) Driver()->registry->Release(p->device, p->size);
    p->accounted = false;
    p->checkpointed = true;
    moved += static_cast<int64_t>(p->size);
  }
  for (auto& [base, m] : s.mappings) ReserveAt(base, m.size);
  return moved;
}

int64_t VmmRestore(const std::vector<int>& device_map) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  int64_t moved = 0;
  for (auto& [h, p] : s.handles) {
    if (!p->checkpointed) continue;
    int device = p->device;
    if (device >= 0 && static_cast<size_t>(device) < device_map.size()) device = device_map[static_cast<size_t>(device)];
    if (device >= 0 && !Driver()->registry->Reserve(device, p->size)) return -1;
    p->fd = NewMemfd(p->size, device);
    if (p->fd < 0) return -1;
    void* dst = mmap(nullptr, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (dst == MAP_FAILED) return -1;
    std::memcpy(dst, p->saved.data(), p->size);
    munmap(dst, p->size);
    std::vector<unsigned char>().swap(p->saved);
    p->device = device;
    p->accounted = device >= 0;
    p->recycled = false;
    p->checkpointed = false;
    if (device >= 0) p->prop.location.id = device;
    moved += static_cast<int64_t>(p->size);
  }
  for (auto& [base, m] : s.mappings) {
    Physical& p = *s.handles[m.handle];
    // Access granted to an old device is granted to the device it is restored onto.
    decltype(m.access) moved_access{};
    for (size_t d = 0; d < m.access.size(); ++d) {
      const size_t to = d < device_map.size() && device_map[d] >= 0
                            ? static_cast<size_t>(device_map[d]) : d;
      moved_access[to] |= m.access[d];
    }
    m.access = moved_access;
    if (!MapRange(base, m, p, false)) return -1;
    uintptr_t b = base;
    int dev = p.device < 0 ? 0 : p.device;
    AllocationTable::Instance().Update(b, [dev](Allocation& a) { a.device = dev; });
    UpdateAllocationAccess(base, m);
  }
  return moved;
}

}  // namespace simcuda
