// VmmTracker (see vmm_tracker.h).
#include "hooks/vmm_tracker.h"

namespace gshare::preload {

VmmTracker& VmmTracker::Get() {
  static auto* tracker = new VmmTracker();  // never destroyed: hooks may run at exit
  return *tracker;
}

void VmmTracker::Created(CUmemGenericAllocationHandle handle, uint64_t bytes) {
  MutexLock lock(mu_);
  handles_[handle] = Handle{memory::ExternalKind::kAppVmm, bytes, 1, 0};
}

void VmmTracker::Imported(CUmemGenericAllocationHandle handle) {
  MutexLock lock(mu_);
  handles_[handle] = Handle{memory::ExternalKind::kIpcImport, 0, 1, 0};
}

void VmmTracker::Retained(CUmemGenericAllocationHandle handle) {
  MutexLock lock(mu_);
  if (auto it = handles_.find(handle); it != handles_.end()) ++it->second.refs;
}

VmmTracker::Freed VmmTracker::ToCountForMap(CUmemGenericAllocationHandle handle, uint64_t offset,
                                            uint64_t size) const {
  MutexLock lock(mu_);
  const auto it = handles_.find(handle);
  if (it == handles_.end() || it->second.kind != memory::ExternalKind::kIpcImport) {
    return {memory::ExternalKind::kAppVmm, 0};
  }
  // An import's size is known only from its mappings: count up to the furthest byte mapped.
  const uint64_t end = offset + size < offset ? UINT64_MAX : offset + size;
  return {memory::ExternalKind::kIpcImport, end > it->second.bytes ? end - it->second.bytes : 0};
}

void VmmTracker::Mapped(CUmemGenericAllocationHandle handle, CUdeviceptr ptr, uint64_t counted) {
  MutexLock lock(mu_);
  const auto it = handles_.find(handle);
  if (it == handles_.end()) return;
  it->second.bytes += counted;
  ++it->second.mappings;
  mappings_[ptr] = handle;
}

std::vector<VmmTracker::Freed> VmmTracker::Unmapped(CUdeviceptr ptr, uint64_t size) {
  std::vector<Freed> freed;
  MutexLock lock(mu_);
  auto m = mappings_.lower_bound(ptr);
  while (m != mappings_.end() && m->first - ptr < size) {
    const auto h = handles_.find(m->second);
    m = mappings_.erase(m);
    if (h == handles_.end()) continue;
    --h->second.mappings;
    if (auto f = FreeIfUnused(h)) freed.push_back(*f);
  }
  return freed;
}

std::optional<VmmTracker::Freed> VmmTracker::Released(CUmemGenericAllocationHandle handle) {
  MutexLock lock(mu_);
  const auto it = handles_.find(handle);
  if (it == handles_.end()) return std::nullopt;
  --it->second.refs;
  return FreeIfUnused(it);
}

std::optional<VmmTracker::Freed> VmmTracker::FreeIfUnused(
    std::map<CUmemGenericAllocationHandle, Handle>::iterator it) {
  if (it->second.refs > 0 || it->second.mappings > 0) return std::nullopt;
  const Freed freed{it->second.kind, it->second.bytes};
  handles_.erase(it);
  return freed;
}

}  // namespace gshare::preload
