// VgpuMemory: owned-address allocation (dedicated chunks + shared arenas), quota, stream-ordered
// frees and the same-address swap engine. Design in docs/vgpu-memory.md.
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
#include "gshare/memory/vgpu_memory.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <numeric>
#include <system_error>
#include <thread>
#include <vector>

#include "deferred_frees.h"
#include "fair_mutex.h"
#include "kept_memory.h"
#include "pinned_staging.h"
#include "range_allocator.h"
#include "segment.h"
#include "swap_copier.h"

namespace gshare::memory {
namespace {

constexpr uint64_t kPreferredGranule = 2 * kMiB;
// Swap-out releases physical memory in batches of at least this many bytes, each as soon as its
// copies have completed.
constexpr uint64_t kReleaseBatchBytes = 64 * kMiB;
// With a progress callback, swaps mark their copies at least this often and report each mark
// as it completes (a slow link must not look like a stalled swap to the arbiter).
constexpr uint64_t kProgressMarkBytes = 16 * kMiB;

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::chrono::nanoseconds Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start);
}

// The shim's logger (SetLogger; GSHARE_LOG_LEVEL / GSHARE_LOG_FILE); without one the memory
// manager stays silent, so nothing reaches the application's stderr. Not spdlog's registry:
// it is a static that is destroyed at exit while a swap may still log (TSan: a data race
// between ~registry and spdlog::get from the control thread, ShimTest.SwapsWhileThreadsSubmit).
std::atomic<spdlog::logger*> g_logger{nullptr};  // trivially destructible

spdlog::logger* Logger() { return g_logger.load(std::memory_order_acquire); }

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

}  // namespace

void SetLogger(spdlog::logger* logger) { g_logger.store(logger, std::memory_order_release); }

class VgpuMemory::Impl {
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

  CUresult Allocate(size_t bytes, uint64_t alignment, CUdeviceptr* dptr) EXCLUDES(mu_) {
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

  CUresult Free(CUdeviceptr dptr) EXCLUDES(mu_) {
    if (dptr == 0) return CUDA_SUCCESS;
    FairMutexLock lock(mu_);
    auto it = allocations_.find(dptr);
    if (it == allocations_.end() || it->second.pending_free) return CUDA_ERROR_INVALID_VALUE;
    const CUresult rc = Release(it);
    Reclaim(/*wait=*/false);
    return rc;
  }

  CUresult FreeAsync(CUdeviceptr dptr, CUstream stream) EXCLUDES(mu_) {
    if (dptr == 0) return CUDA_SUCCESS;
    FairMutexLock lock(mu_);
    auto it = allocations_.find(dptr);
    if (it == allocations_.end() || it->second.pending_free) return CUDA_ERROR_INVALID_VALUE;
    const CUresult rc = deferred_.Add(dptr, stream);
    if (rc == CUDA_SUCCESS) it->second.pending_free = true;
    return rc;
  }

  void ReclaimCompletedFrees() EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    Reclaim(/*wait=*/false);
  }

  void GetInfo(size_t* free_bytes, size_t* total_bytes) EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    Reclaim(/*wait=*/false);
    const uint64_t used = Used();
    if (free_bytes != nullptr) *free_bytes = used >= quota_ ? 0 : quota_ - used;
    if (total_bytes != nullptr) *total_bytes = quota_;
  }

  void GetInfoOnDevice(uint64_t device_free, uint64_t device_total, size_t* free_bytes,
                       size_t* total_bytes) EXCLUDES(mu_) {
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

  CUresult LookupRange(CUdeviceptr ptr, CUdeviceptr* base, size_t* size) const EXCLUDES(mu_) {
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

  CUresult TrackExternal(ExternalKind kind, uint64_t bytes) EXCLUDES(mu_) {
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

  void UntrackExternal(ExternalKind kind, uint64_t bytes) EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    uint64_t& counted = external_[static_cast<int>(kind)];
    counted -= std::min(counted, bytes);
  }

  void SetQuota(uint64_t quota_bytes) EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    Reclaim(/*wait=*/false);
    quota_ = quota_bytes;
    (void)kept_.TrimTo(quota_ - std::min(quota_, Used()));
  }

  CUresult SwapOut(const DrainCallback& drain, SwapStats* stats) EXCLUDES(mu_) {
    const auto start = std::chrono::steady_clock::now();
    SwapStats result;
    FairMutexLock lock(mu_);
    if (!resident_) return Report(CUDA_SUCCESS, result, stats);
    Reclaim(/*wait=*/false);
    // The drain and the copies run with a context of the vGPU's device current.
    ScopedDeviceContext context(api_, device_);
    if (context.status() != CUDA_SUCCESS) return context.status();
    const auto drain_start = std::chrono::steady_clock::now();
    if (drain) {
      const CUresult rc = drain();
      if (rc != CUDA_SUCCESS) return rc;
    }
    Reclaim(/*wait=*/true);
    result.drain_time = Since(drain_start);
    (void)kept_.TrimTo(0);  // freed memory kept for reuse goes, it holds nothing to save
    const std::vector<PieceRef> pieces = PiecesWithUsers();
    CUresult release_rc = CUDA_SUCCESS;
    if (!pieces.empty()) {
      const uint64_t total = backed_bytes_;
      // Pin with headroom so a growing image does not re-pin (slow) at every swap-out.
      CUresult rc = CUDA_SUCCESS;
      if (total > staging_.capacity()) {  // not prepared ahead (PrepareStaging): pin now
        const auto pin_start = std::chrono::steady_clock::now();
        rc = staging_.EnsureCapacity(total, StagingTarget(total), device_);
        if (rc != CUDA_SUCCESS) return rc;
        result.pin_time = Since(pin_start);
      }
      SwapCopier copier(api_, options_.swap_piece_bytes);
      rc = copier.Start(options_.swap_streams);
      if (rc != CUDA_SUCCESS) return rc;
      const auto copy_start = std::chrono::steady_clock::now();
      // Enqueue every copy, with a mark after each release batch, then release each batch as
      // soon as its copies are done, so unmapping overlaps the copies still running.
      // Marks in between only report progress (when someone listens).
      struct MarkAt {
        size_t end;        // pieces [0, end) are copied once the mark completes
        uint64_t offset;   // their bytes
        bool release;      // end of a release batch
      };
      std::vector<MarkAt> marks;
      uint64_t offset = 0;
      uint64_t batch_bytes = 0;
      uint64_t unmarked_bytes = 0;
      for (size_t i = 0; i < pieces.size(); ++i) {
        const PieceRef& p = pieces[i];
        const uint64_t size = p.segment->piece_size();
        p.segment->piece(p.index).host_offset = offset;
        // In slices, so a progress mark can fall inside a large piece.
        for (uint64_t done = 0; done < size;) {
          const uint64_t len = progress_ ? std::min(size - done, kProgressMarkBytes) : size;
          copier.CopyOut(staging_.data() + offset, p.segment->piece_address(p.index) + done, len);
          offset += len;
          done += len;
          batch_bytes += len;
          unmarked_bytes += len;
          const bool release =
              done == size && (batch_bytes >= kReleaseBatchBytes || i + 1 == pieces.size());
          if (release || (progress_ && unmarked_bytes >= kProgressMarkBytes)) {
            (void)copier.Mark();
            marks.push_back({done == size ? i + 1 : i, offset, release});
            unmarked_bytes = 0;
            if (release) batch_bytes = 0;
          }
        }
      }
      size_t released = 0;
      for (size_t m = 0; m < marks.size(); ++m) {
        rc = copier.WaitMark(m);
        if (rc != CUDA_SUCCESS) break;
        if (progress_) progress_(marks[m].offset);
        if (!marks[m].release) continue;
        const auto unmap_start = std::chrono::steady_clock::now();
        for (; released < marks[m].end; ++released) {
          const PieceRef& p = pieces[released];
          p.segment->piece(p.index).has_host_copy = true;
          const CUresult unback_rc = p.segment->Unback(p.index);
          if (release_rc == CUDA_SUCCESS) release_rc = unback_rc;
        }
        result.unmap_time += Since(unmap_start);
      }
      if (rc == CUDA_SUCCESS) rc = copier.Finish();
      if (rc != CUDA_SUCCESS) {
        // A copy failed: put back what was already released (its bytes are in the staging) and
        // stay resident.
        const std::vector<PieceRef> undo(pieces.begin(),
                                         pieces.begin() + static_cast<long>(released));
        const CUresult undo_rc = BackAndCopyIn(undo, device_, nullptr);
        if (undo_rc != CUDA_SUCCESS) {
          if (auto log = Logger()) {
            log->error("vgpu memory: swap-out failed and its undo failed too ({}); {} pieces lost",
                       static_cast<int>(undo_rc), undo.size());
          }
        }
        return rc;
      }
      result.copy_time = Since(copy_start);
      result.bytes = offset;
    }
    result.physical_pieces = pieces.size();
    resident_ = false;
    ++swap_outs_;
    result.elapsed = Since(start);
    if (auto log = Logger()) {
      log->info("vgpu memory: swapped out {} bytes in {} pieces, {:.3f} ms (drain {:.3f} ms, "
                "pin {:.3f} ms, copy {:.3f} ms incl. unmap {:.3f} ms)",
                result.bytes, result.physical_pieces, result.elapsed.count() / 1e6,
                result.drain_time.count() / 1e6, result.pin_time.count() / 1e6,
                result.copy_time.count() / 1e6, result.unmap_time.count() / 1e6);
    }
    return Report(release_rc, result, stats);
  }

  CUresult SwapIn(CUdevice device, SwapStats* stats) EXCLUDES(mu_) {
    const auto start = std::chrono::steady_clock::now();
    SwapStats result;
    FairMutexLock lock(mu_);
    if (resident_) {
      return Report(device == device_ ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, result, stats);
    }
    const std::vector<PieceRef> pieces = PiecesWithUsers();
    if (!pieces.empty()) {
      ScopedDeviceContext context(api_, device);
      if (context.status() != CUDA_SUCCESS) return context.status();
      const auto copy_start = std::chrono::steady_clock::now();
      const CUresult rc = BackAndCopyIn(pieces, device, &result.bytes);
      if (rc != CUDA_SUCCESS) return rc;
      result.copy_time = Since(copy_start);
    }
    result.physical_pieces = pieces.size();
    resident_ = true;
    device_ = device;
    ++swap_ins_;
    result.elapsed = Since(start);
    if (auto log = Logger()) {
      log->info("vgpu memory: swapped in {} bytes in {} pieces onto device {}, {:.3f} ms",
                result.bytes, result.physical_pieces, device, result.elapsed.count() / 1e6);
    }
    return Report(CUDA_SUCCESS, result, stats);
  }

  CUresult PrepareStaging(uint64_t* pinned) EXCLUDES(mu_) {
    if (pinned != nullptr) *pinned = 0;
    uint64_t target = 0;
    CUdevice home = 0;
    {
      FairMutexLock lock(mu_);
      if (!resident_ || backed_bytes_ == 0 || staging_.capacity() >= backed_bytes_) {
        return CUDA_SUCCESS;
      }
      target = StagingTarget(backed_bytes_);
      home = device_;
    }
    PinnedStaging fresh(api_);  // pinned without the lock: allocations go on meanwhile
    const CUresult rc = fresh.EnsureCapacity(target, target, home);
    if (rc != CUDA_SUCCESS) return rc;
    {
      FairMutexLock lock(mu_);
      // While swapped out the staging holds the image: never replace it then.
      if (!resident_ || fresh.capacity() <= staging_.capacity()) return CUDA_SUCCESS;
      staging_.Swap(fresh);
    }
    if (pinned != nullptr) *pinned = target;
    return CUDA_SUCCESS;  // `fresh` now holds the old buffer, freed here without the lock
  }

  CUresult ReleaseStaging() EXCLUDES(mu_) {
    FairMutexLock lock(mu_);
    if (!resident_) return CUDA_ERROR_INVALID_VALUE;
    staging_.Release();
    return CUDA_SUCCESS;
  }

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

  VgpuMemoryCounters counters() const EXCLUDES(mu_) {
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

 private:
  // Backs `pieces` on `device`, maps them at their addresses and copies back those whose bytes
  // are in the staging. Pipelined and parallel: options_.swap_streams workers (the calling
  // thread and helper threads, each with the caller's context and its own stream) take every
  // n-th piece, map it and enqueue its copies at once, so mapping overlaps copying and mappings
  // run side by side. On success clears has_host_copy and adds the copied bytes to *bytes (if
  // non-null); on failure releases what it created. REQUIRES: a context of `device` is current;
  // the pieces have no handle.
  CUresult BackAndCopyIn(const std::vector<PieceRef>& pieces, CUdevice device, uint64_t* bytes)
      REQUIRES(mu_) {
    CUcontext context = nullptr;
    CUresult rc = api_.ctx_get_current(&context);
    if (rc != CUDA_SUCCESS) return rc;
    const size_t workers =
        std::clamp<size_t>(options_.swap_streams, 1, std::max<size_t>(pieces.size(), 1));
    std::vector<CUmemGenericAllocationHandle> handles(pieces.size(), 0);
    std::vector<CUresult> results(workers, CUDA_SUCCESS);
    std::vector<uint64_t> copied(workers, 0);
    std::atomic<uint64_t> done{0};  // bytes in place (copied, or needing no copy), all workers
    // The workers (helper threads too) use the progress callback and the staging while this
    // thread holds mu_ and waits for them: through these pointers, taken under mu_.
    const SwapProgressCallback* const progress = &progress_;
    uint8_t* const staging = staging_.data();
    auto report = [&](uint64_t more) {
      const uint64_t so_far = done.fetch_add(more, std::memory_order_relaxed) + more;
      (*progress)(so_far);
    };
    auto work = [&](size_t w, bool push_context) {
      if (push_context) {
        results[w] = api_.ctx_push_current(context);
        if (results[w] != CUDA_SUCCESS) return;
      }
      SwapCopier copier(api_, options_.swap_piece_bytes);
      CUresult r = copier.Start(1);
      std::vector<uint64_t> mark_bytes;  // with a progress callback: bytes behind each mark
      uint64_t unmarked = 0;
      for (size_t i = w; r == CUDA_SUCCESS && i < pieces.size(); i += workers) {
        const PieceRef& p = pieces[i];
        r = p.segment->CreateAndMap(p.index, device, &handles[i]);
        if (r != CUDA_SUCCESS) break;
        const PieceState& state = p.segment->piece(p.index);
        const uint64_t size = p.segment->piece_size();
        if (!state.has_host_copy) {
          if (*progress) report(size);
          continue;
        }
        // In slices, so a progress mark can fall inside a large piece.
        for (uint64_t off = 0; off < size;) {
          const uint64_t len = *progress ? std::min(size - off, kProgressMarkBytes) : size;
          copier.CopyIn(p.segment->piece_address(p.index) + off,
                        staging + state.host_offset + off, len);
          off += len;
          unmarked += len;
          if (*progress && unmarked >= kProgressMarkBytes) {
            (void)copier.Mark();
            mark_bytes.push_back(unmarked);
            unmarked = 0;
          }
        }
        copied[w] += size;
      }
      // Everything is enqueued: report each mark as it completes (the tail of a slow link).
      for (size_t m = 0; r == CUDA_SUCCESS && m < mark_bytes.size(); ++m) {
        if (copier.WaitMark(m) == CUDA_SUCCESS) report(mark_bytes[m]);
      }
      const CUresult finish = copier.Finish();
      if (*progress && r == CUDA_SUCCESS && finish == CUDA_SUCCESS && unmarked != 0) report(unmarked);
      results[w] = r != CUDA_SUCCESS ? r : finish;
      if (push_context) {
        CUcontext popped = nullptr;
        (void)api_.ctx_pop_current(&popped);
      }
    };
    std::vector<std::thread> helpers;
    std::vector<size_t> unstarted;  // no thread for them (e.g. address space exhausted): inline
    for (size_t w = 1; w < workers; ++w) {
      try {
        helpers.emplace_back(work, w, true);
      } catch (const std::system_error&) {
        unstarted.push_back(w);
      }
    }
    work(0, false);
    for (size_t w : unstarted) work(w, false);  // the caller's context is current here
    for (std::thread& t : helpers) t.join();
    // Every piece that got a handle is adopted, so the failure path can release it normally.
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (handles[i] != 0) pieces[i].segment->Adopt(pieces[i].index, handles[i]);
    }
    for (CUresult r : results) {
      if (rc == CUDA_SUCCESS) rc = r;
    }
    if (rc != CUDA_SUCCESS) {
      for (const PieceRef& p : pieces) {
        if (p.segment->piece(p.index).handle != 0) (void)p.segment->Unback(p.index);
      }
      return rc;
    }
    for (const PieceRef& p : pieces) p.segment->piece(p.index).has_host_copy = false;
    if (bytes != nullptr) *bytes += std::accumulate(copied.begin(), copied.end(), uint64_t{0});
    return CUDA_SUCCESS;
  }

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

  CUresult EnsureGranule() REQUIRES(mu_) {
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

  CUresult AllocateDedicated(size_t bytes, CUdeviceptr* dptr) REQUIRES(mu_) {
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

  CUresult AllocateShared(size_t bytes, uint64_t reserved, uint64_t alignment,
                          CUdeviceptr* dptr) REQUIRES(mu_) {
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

  // Places an allocation at `offset` in `arena`: checks the quota for the pieces it newly
  // needs, backs them (when resident), and records it. On failure nothing changed (the caller
  // returns the range to the arena).
  CUresult CommitShared(Arena& arena, uint64_t offset, size_t bytes, uint64_t reserved,
                        CUdeviceptr* dptr) REQUIRES(mu_) {
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

  // Frees one allocation, releasing physical memory no live allocation needs any more.
  CUresult Release(std::map<CUdeviceptr, Allocation>::iterator it) REQUIRES(mu_) {
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

  void Reclaim(bool wait) REQUIRES(mu_) {
    if (deferred_.pending() == 0) return;
    for (CUdeviceptr ptr : deferred_.TakeCompleted(wait)) {
      auto it = allocations_.find(ptr);
      if (it != allocations_.end()) (void)Release(it);
    }
  }

  // Pieces that hold (resident) or will hold (swapped out) memory, in address order per segment.
  std::vector<PieceRef> PiecesWithUsers() const REQUIRES(mu_) {
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
