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
// Cost: Note() is two compares against the thread's ThreadState plus one relaxed atomic load
// when the thread submits to the same stream as last time — an explicit stream, or a default
// stream in the same current context. The current context is not asked on that path: each
// thread's cache of its default stream is dropped by every hook that can change the thread's
// current context (CurrentContextChanged: cuCtxSetCurrent, cuCtxPushCurrent, cuCtxPopCurrent,
// cuCtxCreate, cuCtxDestroy, cuDevicePrimaryCtxRelease/Reset), and every thread's by the epoch
// whenever a context is forgotten (destroyed, or a primary context released or reset from any
// thread). The next default-stream submission then asks cuCtxGetCurrent again. Only a stream
// new to the thread takes the mutex.
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
#include "runtime/thread_state.h"

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
  void SetApi(const InflightApi& api) {
    api_ = api;
    enabled_ = api_.complete();
  }

  // A submission to `stream` from the calling thread; `per_thread` for the _ptsz/_ptds variants
  // (their null stream is the per-thread default stream). Call inside the submission gate.
  // Fast path (an explicit stream the thread noted last time): two compares against its
  // ThreadState and one relaxed load; nothing else is inlined into the forwarders.
  __attribute__((always_inline)) void Note(CUstream stream, bool per_thread) {
    if (reinterpret_cast<uintptr_t>(stream) > kLastSpecialStream) [[likely]] {
      const ThreadState& cache = ThisThread();
      if (stream == cache.stream && epoch_.load(std::memory_order_relaxed) == cache.epoch)
          [[likely]] {
        return;
      }
      NoteSlow(stream, nullptr);  // a stream new to the thread (or the tracker is disabled)
      return;
    }
    NoteDefaultStream(stream, per_thread);
  }

  // True when the thread's last noted stream is `stream` and nothing was forgotten since: Note
  // would do nothing (the gated calls' fast path checks this before the gate; only explicit
  // streams are ever cached this way, and only while the tracker is enabled).
  __attribute__((always_inline)) bool NotedByThisThread(CUstream stream) const {
    const ThreadState& cache = ThisThread();
    return stream == cache.stream && epoch_.load(std::memory_order_relaxed) == cache.epoch;
  }

  // The same for a default stream (null, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD; `per_thread`:
  // a _ptsz/_ptds call, whose null stream is the per-thread one): this thread noted it last time
  // in the context that is still current on it (its current context has not changed since:
  // CurrentContextChanged clears the cache), nothing forgotten since. No driver call.
  __attribute__((always_inline)) bool DefaultNotedByThisThread(CUstream stream,
                                                               bool per_thread) const {
    if (stream == nullptr) stream = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    const ThreadState& cache = ThisThread();
    return stream == cache.default_stream &&
           epoch_.load(std::memory_order_relaxed) == cache.default_epoch;
  }

  // The calling thread's current context may have changed (or its context was destroyed): its
  // cached default stream is dropped, so its next default-stream submission asks the driver
  // which context is current. Called by every hook that can change the calling thread's
  // current context, after the real call. Thread-local; no lock, no driver call. Out of line, as
  // every store to the thread's TLS block that follows a call (SubmissionGate::ThreadSlot says
  // which GCC 12 sanitizer defect that avoids).
  static void CurrentContextChanged();
  static bool IsExplicitStream(CUstream stream) {
    return reinterpret_cast<uintptr_t>(stream) > kLastSpecialStream;
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
  struct Entry {
    CUcontext context = nullptr;
    CUstream stream = nullptr;  // CU_STREAM_LEGACY for the legacy default stream
  };
  // A default stream (null, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD): it belongs to the thread's
  // current context (cuCtxGetCurrent), then as Note.
  void NoteDefaultStream(CUstream stream, bool per_thread) EXCLUDES(mu_);
  // Records `stream` (with `context`: the current one for a default stream, null for an
  // explicit stream, whose context is asked) and fills the thread's cache. Nothing when the
  // tracker is disabled (incomplete api).
  [[gnu::noinline]] void NoteSlow(CUstream stream, CUcontext context) EXCLUDES(mu_);
  // Calls fn() with `context` current on this thread (pushed and popped when it is not).
  template <typename Fn>
  CUresult WithContext(CUcontext context, const Fn& fn);
  // REQUIRES: the stream's context is current (for the default streams).
  bool IsCapturing(CUstream stream);
  void ForgetContextLocked(CUcontext context) REQUIRES(mu_);

  InflightApi api_;
  bool enabled_ = false;  // api_.complete(), set once before any submission
  // Bumped whenever something is forgotten (every thread's cache is then stale). Each tracker
  // starts at an epoch no earlier tracker of this process image used (a forked child's fresh
  // Runtime never matches a cache its thread inherited from the parent).
  std::atomic<uint64_t> epoch_{FirstEpoch()};
  static uint64_t FirstEpoch();
  mutable Mutex mu_;
  std::vector<Entry> entries_ GUARDED_BY(mu_);
  std::vector<CUcontext> per_thread_ctxs_ GUARDED_BY(mu_);
};

}  // namespace gshare::preload
