// InflightTracker: the streams (and their contexts) the application submits work to, so the shim
// can tell whether GPU work is still in flight (cuStreamQuery, never blocking) and wait for
// exactly that work before it releases the time-slice token or unmaps the vGPU's memory
// (cuStreamSynchronize per tracked stream, in whichever context the stream belongs to, from any
// thread). Streams being captured into a graph are never synchronised or queried (either would
// invalidate the capture): they count as busy, and Drain() reports that it could not drain.
//
// What is tracked: every submission passes Note(stream) inside the submission gate. An explicit
// stream is tracked with its own context (cuStreamGetCtx); the legacy default stream (null,
// CU_STREAM_LEGACY) with the context current on the submitting thread; a per-thread default
// stream (CU_STREAM_PER_THREAD, or null in a _ptsz/_ptds call) cannot be named from another
// thread, so its context is marked and Drain() synchronises that whole context instead (Busy()
// cannot see such work: the submission marks still do). Destroyed streams and contexts are
// forgotten by their hooks before the real destroy runs.
//
// Cost: Note() is a thread-local compare plus one relaxed atomic load when the thread submits to
// the same explicit stream as last time; the legacy/per-thread streams add cuCtxGetCurrent. Only
// a stream new to the thread takes the mutex.
//
// Thread-safety: every method is thread-safe. Busy/Drain/Capturing hold the mutex while they
// call the driver, so a concurrent Forget (stream/context destroy) waits for them: a handle is
// never queried after its destruction began. The mutex is the innermost shim lock (taken under
// the swap mutex and the vGPU memory's, runtime.h "Lock order"): nothing else is locked under
// it, and the driver calls made under it are the real driver's, never the hooks.
// Ownership: one per Runtime, process-lifetime.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "gshare/common/thread_annotations.h"

namespace gshare::preload {

// The driver entry points the tracker calls (the real driver's, never the hooks).
struct InflightApi {
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_push_current)(CUcontext) = nullptr;
  CUresult (*ctx_pop_current)(CUcontext*) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*stream_get_ctx)(CUstream, CUcontext*) = nullptr;
  CUresult (*stream_query)(CUstream) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*exchange_capture_mode)(CUstreamCaptureMode*) = nullptr;  // optional
  [[nodiscard]] bool complete() const {
    return ctx_get_current && ctx_push_current && ctx_pop_current && ctx_synchronize &&
           stream_get_ctx && stream_query && stream_synchronize &&
           stream_is_capturing;
  }
};

class InflightTracker {
 public:
  // `api` may be incomplete (then Note does nothing and Busy/Drain report nothing to do).
  void SetApi(const InflightApi& api) { api_ = api; }

  // A submission to `stream` from the calling thread; `per_thread` for the _ptsz/_ptds variants
  // (their null stream is the per-thread default stream). Call inside the submission gate.
  void Note(CUstream stream, bool per_thread) {
    if (!api_.complete()) return;
    if (stream == nullptr) stream = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    const uint64_t epoch = epoch_.load(std::memory_order_relaxed);
    ThreadCache& cache = Cache();
    CUcontext context = nullptr;
    if (reinterpret_cast<uintptr_t>(stream) > kLastSpecialStream) {
      if (stream == cache.stream && epoch == cache.epoch) return;
    } else {
      // The default streams belong to the thread's current context.
      if (api_.ctx_get_current(&context) != CUDA_SUCCESS || context == nullptr) return;
      if (stream == cache.stream && context == cache.context && epoch == cache.epoch) return;
    }
    NoteSlow(stream, context, epoch);
  }

  // True if tracked work has not completed (cuStreamQuery says CUDA_ERROR_NOT_READY) or a
  // tracked stream is being captured. Never blocks on the GPU.
  bool Busy() EXCLUDES(mu_);
  // True if a tracked stream is being captured into a graph.
  bool Capturing() EXCLUDES(mu_);
  // Waits for every tracked stream (legacy/explicit: cuStreamSynchronize; contexts with
  // per-thread-stream submissions: cuCtxSynchronize), pushing each stream's context as needed.
  // Returns CUDA_SUCCESS, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED if a tracked stream is being
  // captured (that stream and its context are left alone; the others are drained), or the
  // first other failure. Streams whose context has gone away are forgotten.
  CUresult Drain() EXCLUDES(mu_);

  // The stream / context is about to be destroyed by the application.
  void ForgetStream(CUstream stream) EXCLUDES(mu_);
  // cuStreamDestroy: the driver would finish the stream's queued work after the destroy returns,
  // out of the tracker's sight, so a tracked stream is synchronised first (unless capturing).
  void ForgetStreamAfterWork(CUstream stream) EXCLUDES(mu_);
  void ForgetContext(CUcontext context) EXCLUDES(mu_);
  // A primary context is released or reset: runs `release()` (the real call) with the tracker
  // locked, then forgets `primary`'s streams if `still_active()` says it is gone. Returns what
  // release() returned.
  template <typename Release, typename StillActive>
  CUresult ReleasePrimary(CUcontext primary, const Release& release,
                          const StillActive& still_active) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    const CUresult r = release();
    if (primary != nullptr && !still_active()) ForgetContextLocked(primary);
    return r;
  }

  // Number of tracked streams (tests, stats).
  size_t tracked() const EXCLUDES(mu_);

 private:
  static constexpr uintptr_t kLastSpecialStream = 2;  // null, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
  struct ThreadCache {
    CUstream stream = nullptr;
    CUcontext context = nullptr;
    uint64_t epoch = ~uint64_t{0};
  };
  struct Entry {
    CUcontext context = nullptr;
    CUstream stream = nullptr;  // CU_STREAM_LEGACY for the legacy default stream
  };
  static ThreadCache& Cache() {
    static constinit __attribute__((tls_model("initial-exec"))) thread_local ThreadCache cache;
    return cache;
  }
  // `context`: the current one for a default stream, null for an explicit stream.
  void NoteSlow(CUstream stream, CUcontext context, uint64_t epoch) EXCLUDES(mu_);
  // Calls fn() with `context` current on this thread (pushed and popped when it is not).
  template <typename Fn>
  CUresult WithContext(CUcontext context, const Fn& fn);
  // REQUIRES: the stream's context is current (for the default streams).
  bool IsCapturing(CUstream stream);
  void ForgetContextLocked(CUcontext context) REQUIRES(mu_);

  InflightApi api_;
  std::atomic<uint64_t> epoch_{0};
  mutable Mutex mu_;
  std::vector<Entry> entries_ GUARDED_BY(mu_);
  std::vector<CUcontext> per_thread_ctxs_ GUARDED_BY(mu_);
};

}  // namespace gshare::preload
