// VmmTracker: the application's own VMM handles and their mappings, so that a handle's bytes
// count against the vGPU's quota for as long as the driver keeps its memory alive: from
// cuMemCreate (an imported handle: from what its cuMemMap calls map) until its last reference is
// gone — every handle reference (cuMemCreate, cuMemImportFromShareableHandle,
// cuMemRetainAllocationHandle, minus cuMemRelease) and every mapping (cuMemMap minus
// cuMemUnmap). The standard idiom (create, reserve, map, set access, release) leaves the memory
// mapped after the release: it stays counted until the cuMemUnmap.
//
// The tracker only keeps the books; the hooks (external_hooks.cc) count and give back the bytes
// it reports (VgpuMemory::TrackExternal / UntrackExternal), outside its lock. Handles it does not
// know (host-located memory, which is not counted) are ignored.
//
// Thread-safety: all methods are thread-safe (one mutex, a leaf; not a fast path).
// Ownership: process-lifetime singleton (hooks may run at exit).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "gshare/common/thread_annotations.h"
#include "gshare/memory/vgpu_memory.h"

namespace gshare::preload {

class VmmTracker {
 public:
  // Bytes given back to the quota when a handle's last reference and mapping are gone.
  struct Freed {
    memory::ExternalKind kind;
    uint64_t bytes;
  };

  static VmmTracker& Get();

  // cuMemCreate succeeded: `bytes` (already counted as kAppVmm) belong to `handle`.
  void Created(CUmemGenericAllocationHandle handle, uint64_t bytes) EXCLUDES(mu_);
  // cuMemImportFromShareableHandle succeeded: memory of unknown size, counted (kIpcImport) by
  // what its mappings reach.
  void Imported(CUmemGenericAllocationHandle handle) EXCLUDES(mu_);
  // cuMemRetainAllocationHandle returned `handle`: one more reference (if known).
  void Retained(CUmemGenericAllocationHandle handle) EXCLUDES(mu_);

  // Before cuMemMap of `size` bytes at `offset` of `handle`: the bytes the caller must count
  // first (an imported handle mapped beyond what was counted for it; 0 otherwise), and of what
  // kind.
  [[nodiscard]] Freed ToCountForMap(CUmemGenericAllocationHandle handle, uint64_t offset,
                                    uint64_t size) const EXCLUDES(mu_);
  // cuMemMap succeeded at `ptr`; `counted` = what ToCountForMap asked for (and was counted).
  void Mapped(CUmemGenericAllocationHandle handle, CUdeviceptr ptr, uint64_t counted)
      EXCLUDES(mu_);
  // cuMemUnmap of [ptr, ptr + size) succeeded: the handles whose last reference went with it.
  std::vector<Freed> Unmapped(CUdeviceptr ptr, uint64_t size) EXCLUDES(mu_);
  // cuMemRelease succeeded: what to give back if that was the handle's last reference and it is
  // not mapped any more (a mapped handle stays counted until its last cuMemUnmap).
  std::optional<Freed> Released(CUmemGenericAllocationHandle handle) EXCLUDES(mu_);

 private:
  struct Handle {
    memory::ExternalKind kind = memory::ExternalKind::kAppVmm;
    uint64_t bytes = 0;  // counted against the quota
    int refs = 1;
    int mappings = 0;
  };
  // Removes `it` and returns its bytes when nothing refers to it any more.
  std::optional<Freed> FreeIfUnused(std::map<CUmemGenericAllocationHandle, Handle>::iterator it)
      REQUIRES(mu_);

  mutable Mutex mu_;  // a leaf
  std::map<CUmemGenericAllocationHandle, Handle> handles_ GUARDED_BY(mu_);
  std::map<CUdeviceptr, CUmemGenericAllocationHandle> mappings_ GUARDED_BY(mu_);  // by base
};

}  // namespace gshare::preload
