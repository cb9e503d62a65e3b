// VgpuMemory::Impl, the state behind VgpuMemory: owned-address allocation (dedicated chunks +
// shared arenas), quota and stream-ordered frees in vgpu_memory.cc; the same-address swap engine
// in vgpu_swap.cc. Private to preload/src/memory. Design in docs/vgpu-memory.md.
//
// Invariants (all under mu_):
//   1. every live allocation lies inside exactly one segment: a dedicated chunk (one piece whose
//      users == 1) or an arena (its range is allocated in that arena's RangeAllocator);
//   2. a piece's users == the number of live allocations overlapping it (pending async frees
//      included: they are live until their event completes);
//   3. backed_bytes_ == sum of piece_size over pieces with users > 0;
//   4. resident_ == true  => every piece with users > 0 has a handle, and no other piece has one
//      except kept pieces (users == 0, kept: freed memory kept mapped for reuse, kept_);
//      resident_ == false => no piece has a handle and nothing is kept;
//   5. used = backed_bytes_ + external total; an allocation never makes used exceed quota_, and
//      used + kept_.bytes() never exceeds quota_ either (kept memory is trimmed first).
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <vector>

#include "deferred_frees.h"
#include "fair_mutex.h"
#include "gshare/memory/vgpu_memory.h"
#include "kept_memory.h"
#include "pinned_staging.h"
#include "range_allocator.h"
#include "segment.h"

namespace gshare::memory {
namespace internal {

inline constexpr uint64_t kPreferredGranule = 2 * kMiB;
// Swap-out releases physical memory in batches of at least this many bytes, each as soon as its
// copies have completed.
inline constexpr uint64_t kReleaseBatchBytes = 64 * kMiB;
// With a progress callback, swaps mark their copies at least this often and report each mark
// as it completes (a slow link must not look like a stalled swap to the arbiter).
inline constexpr uint64_t kProgressMarkBytes = 16 * kMiB;

inline uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

inline std::chrono::nanoseconds Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start);
}

// The logger SetLogger installed, or null (vgpu_memory.cc).
spdlog::logger* Logger();

struct Arena {
  Arena(std::unique_ptr<Segment> seg, uint64_t bytes) : segment(std::move(seg)), ranges(bytes) {}
  std::unique_ptr<Segment> segment;
  RangeAllocator ranges;
};

struct Allocation {
  uint64_t requested = 0;    // bytes the application asked for
  uint64_t reserved = 0;     // bytes taken from the segment
  Segment* segment = nullptr;
  Arena* arena = nullptr;    // null for a dedicated chunk
  bool pending_free = false;
};

struct PieceRef {
  Segment* segment;
  size_t index;
};

}  // namespace internal

class VgpuMemory::Impl {
  using Arena = internal::Arena;
  using Allocation = internal::Allocation;
  using PieceRef = internal::PieceRef;

 public:
  Impl(const DeviceApi& api, const VgpuMemoryOptions& options)
      : api_(api), options_(options), quota_(options.quota_bytes), device_(options.device),
        deferred_(api_), staging_(api_), kept_(options.keep_freed_bytes) {}

  ~Impl() {
    (void)kept_.TrimTo(0);
    allocations_.clear();
    dedicated_.clear();
    arenas_.clear();
  }

  CUresult Allocate(size_t bytes, uint64_t alignment, CUdeviceptr* dptr) EXCLUDES(mu_);

  CUresult Free(CUdeviceptr dptr) EXCLUDES(mu_);

  CUresult FreeAsync(CUdeviceptr dptr, CUstream stream) EXCLUDES(mu_);

  void ReclaimCompletedFrees() EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    Reclaim(/*wait=*/false);
  }

  void GetInfo(size_t* free_bytes, size_t* total_bytes) EXCLUDES(mu_);

  void GetInfoOnDevice(uint64_t device_free, uint64_t device_total, size_t* free_bytes,
                       size_t* total_bytes) EXCLUDES(mu_);

  CUresult LookupRange(CUdeviceptr ptr, CUdeviceptr* base, size_t* size) const EXCLUDES(mu_);

  CUresult TrackExternal(ExternalKind kind, uint64_t bytes) EXCLUDES(mu_);

  void UntrackExternal(ExternalKind kind, uint64_t bytes) EXCLUDES(mu_);

  void SetQuota(uint64_t quota_bytes) EXCLUDES(mu_);

  CUresult SwapOut(const DrainCallback& drain, SwapStats* stats) EXCLUDES(mu_);

  CUresult SwapIn(CUdevice device, SwapStats* stats) EXCLUDES(mu_);

  CUresult PrepareStaging(uint64_t* pinned) EXCLUDES(mu_);

  CUresult ReleaseStaging() EXCLUDES(mu_);

  void Rehome(CUdevice device) EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    device_ = device;
  }

  void SetSwapProgressCallback(SwapProgressCallback callback) EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    progress_ = std::move(callback);
  }

  bool resident() const EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    return resident_;
  }

  VgpuMemoryCounters counters() const EXCLUDES(mu_);

 private:
  // Backs `pieces` on `device`, maps them at their addresses and copies back those whose bytes
  // are in the staging. Pipelined and parallel: options_.swap_streams workers (the calling
  // thread and helper threads, each with the caller's context and its own stream) take every
  // n-th piece, map it and enqueue its copies at once, so mapping overlaps copying and mappings
  // run side by side. On success clears has_host_copy and adds the copied bytes to *bytes (if
  // non-null); on failure releases what it created. REQUIRES: a context of `device` is current;
  // the pieces have no handle.
  CUresult BackAndCopyIn(const std::vector<PieceRef>& pieces, CUdevice device, uint64_t* bytes)
      REQUIRES(mu_);

  static CUresult Report(CUresult rc, const SwapStats& result, SwapStats* stats) {
    if (stats != nullptr) *stats = result;
    return rc;
  }

  uint64_t ExternalTotal() const REQUIRES(mu_) {
    return std::accumulate(std::begin(external_), std::end(external_), uint64_t{0});
  }
  uint64_t Used() const REQUIRES(mu_) { return backed_bytes_ + ExternalTotal(); }
  // Staging size for an image of `bytes`: headroom so a growing image does not re-pin (slow)
  // at every swap-out, within the quota.
  uint64_t StagingTarget(uint64_t bytes) const REQUIRES(mu_) {
    return std::max(bytes, std::min(quota_, bytes + bytes / 4));
  }
  bool Fits(uint64_t extra) const REQUIRES(mu_) {
    return extra <= quota_ && Used() <= quota_ - extra;
  }
  // What kept memory may occupy: the quota left over by live allocations.
  uint64_t Room() const REQUIRES(mu_) { return quota_ - std::min(quota_, Used()); }

  CUresult EnsureGranule() REQUIRES(mu_);

  CUresult AllocateDedicated(size_t bytes, CUdeviceptr* dptr) REQUIRES(mu_);

  CUresult AllocateShared(size_t bytes, uint64_t reserved, uint64_t alignment,
                          CUdeviceptr* dptr) REQUIRES(mu_);

  // Places an allocation at `offset` in `arena`: checks the quota for the pieces it newly
  // needs, backs them (when resident), and records it. On failure nothing changed (the caller
  // returns the range to the arena).
  CUresult CommitShared(Arena& arena, uint64_t offset, size_t bytes, uint64_t reserved,
                        CUdeviceptr* dptr) REQUIRES(mu_);

  // Frees one allocation, releasing physical memory no live allocation needs any more.
  CUresult Release(std::map<CUdeviceptr, Allocation>::iterator it) REQUIRES(mu_);

  void Reclaim(bool wait) REQUIRES(mu_);

  // Pieces that hold (resident) or will hold (swapped out) memory, in address order per segment.
  std::vector<PieceRef> PiecesWithUsers() const REQUIRES(mu_);

  uint64_t CountHandles() const REQUIRES(mu_) {
    uint64_t n = 0;
    for (const auto& arena : arenas_) n += arena->segment->present_pieces();
    for (const auto& [base, seg] : dedicated_) n += seg->present_pieces();
    return n;
  }

  // FIFO: allocations and frees that arrive during a swap run before a swap requested after
  // them, so back-to-back swaps cannot starve them.
  // Lock order: taken under the runtime's swap mutex (swaps, counters) and the arbiter client's
  // mutex (residency checks); the drain callback takes the in-flight tracker's mutex under it,
  // and the progress callback must take no shim mutex (runtime.h, "Lock order").
  mutable FairMutex mu_;
  const DeviceApi api_;
  const VgpuMemoryOptions options_;
  uint64_t quota_ GUARDED_BY(mu_);
  CUdevice device_ GUARDED_BY(mu_);
  uint64_t granule_ GUARDED_BY(mu_) = 0;
  uint64_t large_threshold_ GUARDED_BY(mu_) = 0;
  uint64_t arena_bytes_ GUARDED_BY(mu_) = 0;
  bool resident_ GUARDED_BY(mu_) = true;
  SwapProgressCallback progress_ GUARDED_BY(mu_);  // called by swaps (and their helpers) under mu_
  DeferredFrees deferred_ GUARDED_BY(mu_);
  PinnedStaging staging_ GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Arena>> arenas_ GUARDED_BY(mu_);
  KeptMemory kept_ GUARDED_BY(mu_);  // after arenas_: it refers to their pieces
  std::map<CUdeviceptr, std::unique_ptr<Segment>> dedicated_ GUARDED_BY(mu_);
  std::map<CUdeviceptr, Allocation> allocations_ GUARDED_BY(mu_);
  uint64_t backed_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t requested_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t external_[kExternalKindCount] GUARDED_BY(mu_) = {};
  uint64_t allocations_total_ GUARDED_BY(mu_) = 0;
  uint64_t frees_total_ GUARDED_BY(mu_) = 0;
  uint64_t out_of_memory_ GUARDED_BY(mu_) = 0;
  uint64_t swap_outs_ GUARDED_BY(mu_) = 0;
  uint64_t swap_ins_ GUARDED_BY(mu_) = 0;
};

}  // namespace gshare::memory
