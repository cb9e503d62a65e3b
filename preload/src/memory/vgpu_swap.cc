// VgpuMemory's same-address swap engine: swap-out copies every backed piece to the pinned
// staging and releases its physical memory in batches while the copies still run; swap-in backs
// and maps the pieces again at their addresses (on any device) and copies their bytes back,
// pipelined over several streams; the staging is pinned ahead of a swap-out when asked
// (PrepareStaging). The state it works on: vgpu_memory_impl.h. Design in docs/vgpu-memory.md.
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

#include "swap_copier.h"
#include "vgpu_memory_impl.h"

namespace gshare::memory {

using internal::kProgressMarkBytes;
using internal::kReleaseBatchBytes;
using internal::Logger;
using internal::PieceRef;
using internal::Since;

CUresult VgpuMemory::Impl::SwapOut(const DrainCallback& drain, SwapStats* stats) {
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

CUresult VgpuMemory::Impl::SwapIn(CUdevice device, SwapStats* stats) {
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

CUresult VgpuMemory::Impl::PrepareStaging(uint64_t* pinned) {
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

CUresult VgpuMemory::Impl::ReleaseStaging() {
  FairMutexLock lock(mu_);
  if (!resident_) return CUDA_ERROR_INVALID_VALUE;
  staging_.Release();
  return CUDA_SUCCESS;
}

CUresult VgpuMemory::Impl::BackAndCopyIn(const std::vector<PieceRef>& pieces, CUdevice device,
                                         uint64_t* bytes) {
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

}  // namespace gshare::memory
