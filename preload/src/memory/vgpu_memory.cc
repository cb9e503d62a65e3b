// VgpuMemory: owned-address allocation (dedicated chunks + shared arenas), quota and
// stream-ordered frees (the state and its invariants: vgpu_memory_impl.h; the swap engine:
// vgpu_swap.cc). Design in docs/vgpu-memory.md.
#include "gshare/memory/vgpu_memory.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <vector>

#include "vgpu_memory_impl.h"

namespace gshare::memory {
namespace internal {
namespace {

// The shim's logger (SetLogger; GSHARE_LOG_LEVEL / GSHARE_LOG_FILE); without one the memory
// manager stays silent, so nothing reaches the application's stderr. Not spdlog's registry:
// it is a static that is destroyed at exit while a swap may still log (TSan: a data race
// between ~registry and spdlog::get from the control thread, ShimTest.SwapsWhileThreadsSubmit).
std::atomic<spdlog::logger*> g_logger{nullptr};  // trivially destructible

}  // namespace

spdlog::logger* Logger() { return g_logger.load(std::memory_order_acquire); }

}  // namespace internal

using internal::AlignUp;
using internal::Allocation;
using internal::Arena;
using internal::kPreferredGranule;
using internal::PieceRef;

void SetLogger(spdlog::logger* logger) {
  internal::g_logger.store(logger, std::memory_order_release);
}

CUresult VgpuMemory::Impl::Allocate(size_t bytes, uint64_t alignment, CUdeviceptr* dptr) {
  if (bytes == 0 || dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FairMutexLock lock(mu_);
  if (bytes > quota_) {  // can never fit (and rounding it could overflow)
    ++out_of_memory_;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult rc = EnsureGranule();
  if (rc != CUDA_SUCCESS) return rc;
  Reclaim(/*wait=*/false);
  const uint64_t reserved = AlignUp(bytes, alignment);
  rc = reserved >= large_threshold_ ? AllocateDedicated(bytes, dptr)
                                    : AllocateShared(bytes, reserved, alignment, dptr);
  if (rc == CUDA_SUCCESS) {
    ++allocations_total_;
    requested_bytes_ += bytes;
  } else if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
    ++out_of_memory_;
  }
  return rc;
}

CUresult VgpuMemory::Impl::Free(CUdeviceptr dptr) {
  if (dptr == 0) return CUDA_SUCCESS;
  FairMutexLock lock(mu_);
  auto it = allocations_.find(dptr);
  if (it == allocations_.end() || it->second.pending_free) return CUDA_ERROR_INVALID_VALUE;
  const CUresult rc = Release(it);
  Reclaim(/*wait=*/false);
  return rc;
}

CUresult VgpuMemory::Impl::FreeAsync(CUdeviceptr dptr, CUstream stream) {
  if (dptr == 0) return CUDA_SUCCESS;
  FairMutexLock lock(mu_);
  auto it = allocations_.find(dptr);
  if (it == allocations_.end() || it->second.pending_free) return CUDA_ERROR_INVALID_VALUE;
  const CUresult rc = deferred_.Add(dptr, stream);
  if (rc == CUDA_SUCCESS) it->second.pending_free = true;
  return rc;
}

void VgpuMemory::Impl::GetInfo(size_t* free_bytes, size_t* total_bytes) {
  FairMutexLock lock(mu_);
  Reclaim(/*wait=*/false);
  const uint64_t used = Used();
  if (free_bytes != nullptr) *free_bytes = used >= quota_ ? 0 : quota_ - used;
  if (total_bytes != nullptr) *total_bytes = quota_;
}

void VgpuMemory::Impl::GetInfoOnDevice(uint64_t device_free, uint64_t device_total,
                                       size_t* free_bytes, size_t* total_bytes) {
  FairMutexLock lock(mu_);
  Reclaim(/*wait=*/false);
  const uint64_t total = std::min(quota_, device_total);
  uint64_t free = Room();
  // Resident: what the GPU can still give, plus what this vGPU keeps mapped for reuse (it is
  // released for the application's next allocation). Swapped out, the device's state says
  // nothing about the vGPU (its memory comes back with the swap-in).
  if (resident_) free = std::min(free, device_free + kept_.bytes());
  free = std::min(free, total);
  if (free_bytes != nullptr) *free_bytes = free;
  if (total_bytes != nullptr) *total_bytes = total;
}

CUresult VgpuMemory::Impl::LookupRange(CUdeviceptr ptr, CUdeviceptr* base, size_t* size) const {
  FairMutexLock lock(mu_);
  auto it = allocations_.upper_bound(ptr);
  if (it == allocations_.begin()) return CUDA_ERROR_NOT_FOUND;
  --it;
  if (it->second.pending_free || ptr - it->first >= it->second.requested) {
    return CUDA_ERROR_NOT_FOUND;
  }
  if (base != nullptr) *base = it->first;
  if (size != nullptr) *size = it->second.requested;
  return CUDA_SUCCESS;
}

CUresult VgpuMemory::Impl::TrackExternal(ExternalKind kind, uint64_t bytes) {
  FairMutexLock lock(mu_);
  Reclaim(/*wait=*/false);  // completed stream-ordered frees give their memory back first
  if (bytes > quota_ || Used() > quota_ - bytes) {
    ++out_of_memory_;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  (void)kept_.TrimTo(quota_ - Used() - bytes);
  external_[static_cast<int>(kind)] += bytes;
  return CUDA_SUCCESS;
}

void VgpuMemory::Impl::UntrackExternal(ExternalKind kind, uint64_t bytes) {
  FairMutexLock lock(mu_);
  uint64_t& counted = external_[static_cast<int>(kind)];
  counted -= std::min(counted, bytes);
}

void VgpuMemory::Impl::SetQuota(uint64_t quota_bytes) {
  FairMutexLock lock(mu_);
  Reclaim(/*wait=*/false);
  quota_ = quota_bytes;
  (void)kept_.TrimTo(quota_ - std::min(quota_, Used()));
}

VgpuMemoryCounters VgpuMemory::Impl::counters() const {
  FairMutexLock lock(mu_);
  VgpuMemoryCounters c;
  c.quota_bytes = quota_;
  c.used_bytes = Used();
  c.backed_bytes = backed_bytes_;
  c.requested_bytes = requested_bytes_;
  c.external_bytes = ExternalTotal();
  c.live_allocations = allocations_.size();
  c.pending_async_frees = deferred_.pending();
  c.physical_handles = CountHandles() + kept_.chunks();
  c.kept_bytes = kept_.bytes();
  c.kept_reuses = kept_.reuses();
  c.arenas = arenas_.size();
  c.allocations = allocations_total_;
  c.frees = frees_total_;
  c.out_of_memory = out_of_memory_;
  c.swap_outs = swap_outs_;
  c.swap_ins = swap_ins_;
  c.resident = resident_;
  c.device = device_;
  return c;
}

CUresult VgpuMemory::Impl::EnsureGranule() {
  if (granule_ != 0) return CUDA_SUCCESS;
  const CUmemAllocationProp prop = DevicePinnedProp(device_);
  size_t minimum = 0;
  const CUresult rc = api_.mem_get_allocation_granularity(&minimum, &prop,
                                                          CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (rc != CUDA_SUCCESS) return rc;
  if (minimum == 0) return CUDA_ERROR_UNKNOWN;
  granule_ = AlignUp(kPreferredGranule, minimum);
  large_threshold_ = std::max<uint64_t>(options_.large_threshold, granule_);
  arena_bytes_ = AlignUp(std::max(options_.arena_bytes, large_threshold_), granule_);
  return CUDA_SUCCESS;
}

CUresult VgpuMemory::Impl::AllocateDedicated(size_t bytes, CUdeviceptr* dptr) {
  const uint64_t size = AlignUp(bytes, granule_);
  if (!Fits(size)) return CUDA_ERROR_OUT_OF_MEMORY;
  std::unique_ptr<Segment> segment = resident_ ? kept_.TakeChunk(size) : nullptr;
  if (segment == nullptr) {  // nothing kept of that size: a new chunk
    (void)kept_.TrimTo(quota_ - Used() - size);
    CUresult rc = Segment::Reserve(api_, size, size, granule_, &segment);
    if (rc != CUDA_SUCCESS) return rc;
    if (resident_) {
      rc = segment->Back(0, device_);
      if (rc != CUDA_SUCCESS) return rc;
    }
  }
  segment->piece(0).users = 1;
  backed_bytes_ += size;
  const CUdeviceptr base = segment->base();
  allocations_[base] = Allocation{bytes, size, segment.get(), nullptr, false};
  dedicated_[base] = std::move(segment);
  *dptr = base;
  return CUDA_SUCCESS;
}

CUresult VgpuMemory::Impl::AllocateShared(size_t bytes, uint64_t reserved, uint64_t alignment,
                                          CUdeviceptr* dptr) {
  CUresult last = CUDA_ERROR_OUT_OF_MEMORY;
  bool refused = false;
  for (auto& arena : arenas_) {
    const std::optional<uint64_t> offset = arena->ranges.Allocate(reserved, alignment);
    if (!offset) continue;
    last = CommitShared(*arena, *offset, bytes, reserved, dptr);
    if (last == CUDA_SUCCESS) return last;
    arena->ranges.Free(*offset, reserved);
    if (last != CUDA_ERROR_OUT_OF_MEMORY) return last;
    refused = true;
  }
  // No arena had room (or placing there needed memory the quota refused, in which case a
  // fresh arena needs at least as much).
  if (refused) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!Fits(AlignUp(reserved, granule_))) return CUDA_ERROR_OUT_OF_MEMORY;
  std::unique_ptr<Segment> segment;
  last = Segment::Reserve(api_, arena_bytes_, granule_, granule_, &segment);
  if (last != CUDA_SUCCESS) return last;
  arenas_.push_back(std::make_unique<Arena>(std::move(segment), arena_bytes_));
  Arena& arena = *arenas_.back();
  const std::optional<uint64_t> offset = arena.ranges.Allocate(reserved, alignment);
  if (!offset) return CUDA_ERROR_OUT_OF_MEMORY;
  last = CommitShared(arena, *offset, bytes, reserved, dptr);
  if (last != CUDA_SUCCESS) arena.ranges.Free(*offset, reserved);
  return last;
}

CUresult VgpuMemory::Impl::CommitShared(Arena& arena, uint64_t offset, size_t bytes,
                                        uint64_t reserved, CUdeviceptr* dptr) {
  Segment& seg = *arena.segment;
  const size_t first = seg.FirstPiece(offset);
  const size_t last = seg.LastPiece(offset, reserved);
  uint64_t fresh = 0;
  for (size_t i = first; i <= last; ++i) fresh += seg.piece(i).users == 0 ? 1 : 0;
  const uint64_t extra = fresh * seg.piece_size();
  if (!Fits(extra)) return CUDA_ERROR_OUT_OF_MEMORY;
  if (resident_) {
    // Kept pieces in the range are live again as they are; trim the rest of the kept memory
    // so that used + kept stays within the quota once the new pieces are backed.
    for (size_t i = first; i <= last; ++i)
      if (seg.piece(i).users == 0 && seg.piece(i).kept) kept_.ReusePiece(&seg, i);
    (void)kept_.TrimTo(quota_ - Used() - extra);
    for (size_t i = first; i <= last; ++i) {
      if (seg.piece(i).users != 0 || seg.piece(i).handle != 0) continue;
      const CUresult rc = seg.Back(i, device_);
      if (rc != CUDA_SUCCESS) {
        // Undo: pieces backed here and kept pieces taken for reuse (anywhere in the range).
        for (size_t j = first; j <= last; ++j) {
          if (seg.piece(j).users == 0 && seg.piece(j).handle != 0) (void)seg.Unback(j);
        }
        return rc;
      }
    }
  }
  for (size_t i = first; i <= last; ++i) ++seg.piece(i).users;
  backed_bytes_ += extra;
  const CUdeviceptr base = seg.base() + offset;
  allocations_[base] = Allocation{bytes, reserved, &seg, &arena, false};
  *dptr = base;
  return CUDA_SUCCESS;
}

CUresult VgpuMemory::Impl::Release(std::map<CUdeviceptr, Allocation>::iterator it) {
  const CUdeviceptr base = it->first;
  const Allocation a = it->second;
  allocations_.erase(it);
  requested_bytes_ -= a.requested;
  ++frees_total_;
  CUresult rc = CUDA_SUCCESS;
  if (a.arena == nullptr) {
    backed_bytes_ -= a.reserved;
    auto chunk = dedicated_.find(base);
    if (resident_) (void)kept_.KeepChunk(chunk->second, Room());  // else: unmapped below
    dedicated_.erase(chunk);  // unmaps, releases and frees the VA (unless kept)
    return rc;
  }
  Segment& seg = *a.segment;
  const uint64_t offset = base - seg.base();
  for (size_t i = seg.FirstPiece(offset); i <= seg.LastPiece(offset, a.reserved); ++i) {
    PieceState& piece = seg.piece(i);
    if (--piece.users != 0) continue;
    piece.has_host_copy = false;
    backed_bytes_ -= seg.piece_size();
    if (piece.handle != 0 && resident_ && kept_.KeepPiece(&seg, i, Room())) continue;
    if (piece.handle != 0) {
      const CUresult unback_rc = seg.Unback(i);
      if (rc == CUDA_SUCCESS) rc = unback_rc;
    }
  }
  a.arena->ranges.Free(offset, a.reserved);
  return rc;
}

void VgpuMemory::Impl::Reclaim(bool wait) {
  if (deferred_.pending() == 0) return;
  for (CUdeviceptr ptr : deferred_.TakeCompleted(wait)) {
    auto it = allocations_.find(ptr);
    if (it != allocations_.end()) (void)Release(it);
  }
}

std::vector<PieceRef> VgpuMemory::Impl::PiecesWithUsers() const {
  std::vector<PieceRef> pieces;
  for (const auto& arena : arenas_) {
    Segment* seg = arena->segment.get();
    for (size_t i = 0; i < seg->piece_count(); ++i) {
      if (seg->piece(i).users != 0) pieces.push_back({seg, i});
    }
  }
  for (const auto& [base, seg] : dedicated_) pieces.push_back({seg.get(), 0});
  return pieces;
}

VgpuMemory::VgpuMemory(const DeviceApi& api, const VgpuMemoryOptions& options)
    : impl_(std::make_unique<Impl>(api, options)) {}
VgpuMemory::~VgpuMemory() = default;

CUresult VgpuMemory::Allocate(size_t bytes, CUdeviceptr* dptr) {
  return impl_->Allocate(bytes, kAllocationAlignment, dptr);
}

CUresult VgpuMemory::AllocatePitch(size_t width_bytes, size_t height, unsigned element_size,
                                   CUdeviceptr* dptr, size_t* pitch) {
  if (width_bytes == 0 || height == 0 || dptr == nullptr || pitch == nullptr ||
      (element_size != 4 && element_size != 8 && element_size != 16) ||
      width_bytes > UINT64_MAX - kPitchAlignment) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t row = AlignUp(width_bytes, kPitchAlignment);
  if (row > UINT64_MAX / height) return CUDA_ERROR_INVALID_VALUE;
  const CUresult rc = impl_->Allocate(row * height, kPitchAlignment, dptr);
  if (rc == CUDA_SUCCESS) *pitch = row;
  return rc;
}

CUresult VgpuMemory::Free(CUdeviceptr dptr) { return impl_->Free(dptr); }
CUresult VgpuMemory::AllocateAsync(size_t bytes, CUstream /*stream*/, CUdeviceptr* dptr) {
  return impl_->Allocate(bytes, kAllocationAlignment, dptr);
}
CUresult VgpuMemory::FreeAsync(CUdeviceptr dptr, CUstream stream) {
  return impl_->FreeAsync(dptr, stream);
}
void VgpuMemory::ReclaimCompletedFrees() { impl_->ReclaimCompletedFrees(); }
void VgpuMemory::GetInfo(size_t* free_bytes, size_t* total_bytes) {
  impl_->GetInfo(free_bytes, total_bytes);
}
void VgpuMemory::GetInfoOnDevice(uint64_t device_free, uint64_t device_total, size_t* free_bytes,
                                 size_t* total_bytes) {
  impl_->GetInfoOnDevice(device_free, device_total, free_bytes, total_bytes);
}
CUresult VgpuMemory::LookupRange(CUdeviceptr ptr, CUdeviceptr* base, size_t* size) const {
  return impl_->LookupRange(ptr, base, size);
}
CUresult VgpuMemory::TrackExternal(ExternalKind kind, uint64_t bytes) {
  return impl_->TrackExternal(kind, bytes);
}
void VgpuMemory::UntrackExternal(ExternalKind kind, uint64_t bytes) {
  impl_->UntrackExternal(kind, bytes);
}
void VgpuMemory::SetQuota(uint64_t quota_bytes) { impl_->SetQuota(quota_bytes); }
CUresult VgpuMemory::SwapOut(const DrainCallback& drain, SwapStats* stats) {
  return impl_->SwapOut(drain, stats);
}
CUresult VgpuMemory::SwapIn(CUdevice device, SwapStats* stats) {
  return impl_->SwapIn(device, stats);
}
CUresult VgpuMemory::PrepareStaging(uint64_t* pinned) { return impl_->PrepareStaging(pinned); }
CUresult VgpuMemory::ReleaseStaging() { return impl_->ReleaseStaging(); }
void VgpuMemory::Rehome(CUdevice device) { impl_->Rehome(device); }
void VgpuMemory::SetSwapProgressCallback(SwapProgressCallback callback) {
  impl_->SetSwapProgressCallback(std::move(callback));
}

bool VgpuMemory::resident() const { return impl_->resident(); }
VgpuMemoryCounters VgpuMemory::counters() const { return impl_->counters(); }

}  // namespace gshare::memory
