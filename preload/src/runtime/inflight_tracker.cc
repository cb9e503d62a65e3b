// InflightTracker: tracked streams, their in-flight queries and the drain (see inflight_tracker.h).
#include "runtime/inflight_tracker.h"

#include <algorithm>

namespace gshare::preload {
namespace {

bool IsDefaultStream(CUstream s) { return s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }

// The tracker's own driver calls must stay legal while another thread captures a graph in
// global mode (and must not invalidate that capture): switch this thread to relaxed for them.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(const InflightApi& api) : api_(api) {
    if (api_.exchange_capture_mode != nullptr &&
        api_.exchange_capture_mode(&mode_) == CUDA_SUCCESS) {
      active_ = true;
    }
  }
  ~RelaxedCaptureMode() {
    if (active_) (void)api_.exchange_capture_mode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  const InflightApi& api_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool active_ = false;
};

// A driver result that says the handle or its context no longer exists.
bool Gone(CUresult r) {
  return r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_CONTEXT ||
         r == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

}  // namespace

uint64_t InflightTracker::FirstEpoch() {
  // Trackers are made once per process image (and once more in a forked child, which inherits
  // this counter): 2^32 epochs apart.
  static std::atomic<uint64_t> next{0};
  return next.fetch_add(uint64_t{1} << 32, std::memory_order_relaxed);
}

void InflightTracker::CurrentContextChanged() {
  ThreadState& cache = ThisThread();
  cache.default_stream = nullptr;
  cache.default_context = nullptr;
}

void InflightTracker::NoteDefaultStream(CUstream stream, bool per_thread) {
  if (!enabled_) return;
  if (DefaultNotedByThisThread(stream, per_thread)) return;  // same current context as then
  if (stream == nullptr) stream = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  CUcontext context = nullptr;
  if (api_.ctx_get_current(&context) != CUDA_SUCCESS || context == nullptr) return;
  NoteSlow(stream, context);
}

void InflightTracker::NoteSlow(CUstream stream, CUcontext context) {
  if (!enabled_) return;
  const uint64_t epoch = epoch_.load(std::memory_order_relaxed);
  if (context == nullptr && api_.stream_get_ctx(stream, &context) != CUDA_SUCCESS) return;
  if (context == nullptr) return;
  {
    MutexLock lock(mu_);
    if (stream == CU_STREAM_PER_THREAD) {
      if (std::find(per_thread_ctxs_.begin(), per_thread_ctxs_.end(), context) ==
          per_thread_ctxs_.end()) {
        per_thread_ctxs_.push_back(context);
      }
    } else {
      const bool known = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
        return e.stream == stream && e.context == context;
      });
      if (!known) entries_.push_back({context, stream});
    }
  }
  ThreadState& cache = ThisThread();
  if (IsDefaultStream(stream)) {
    cache.default_stream = stream;
    cache.default_context = context;
    cache.default_epoch = epoch;
  } else {
    cache.stream = stream;
    cache.epoch = epoch;
  }
}

template <typename Fn>
CUresult InflightTracker::WithContext(CUcontext context, const Fn& fn) {
  CUcontext current = nullptr;
  (void)api_.ctx_get_current(&current);
  if (current == context) return fn();
  CUresult r = api_.ctx_push_current(context);
  if (r != CUDA_SUCCESS) return r;
  r = fn();
  CUcontext popped = nullptr;
  (void)api_.ctx_pop_current(&popped);
  return r;
}

bool InflightTracker::IsCapturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (api_.stream_is_capturing(stream, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool InflightTracker::Busy() {
  if (!api_.complete()) return false;
  const RelaxedCaptureMode relaxed(api_);
  MutexLock lock(mu_);
  bool busy = false;
  std::vector<size_t> gone;
  for (size_t i = 0; i < entries_.size() && !busy; ++i) {
    const Entry& e = entries_[i];
    const CUresult r = WithContext(e.context, [&] {
      if (IsCapturing(e.stream)) return CUDA_ERROR_NOT_READY;
      return api_.stream_query(e.stream);
    });
    if (r == CUDA_ERROR_NOT_READY || r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) busy = true;
    if (Gone(r)) gone.push_back(i);
  }
  for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
    entries_.erase(entries_.begin() + static_cast<long>(*it));
  }
  if (!gone.empty()) epoch_.fetch_add(1, std::memory_order_relaxed);
  return busy;
}

bool InflightTracker::Capturing() {
  if (!api_.complete()) return false;
  const RelaxedCaptureMode relaxed(api_);
  MutexLock lock(mu_);
  for (const Entry& e : entries_) {
    const CUresult r = WithContext(
        e.context, [&] { return IsCapturing(e.stream) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS; });
    if (r == CUDA_ERROR_NOT_READY) return true;
  }
  return false;
}

CUresult InflightTracker::Drain() {
  if (!api_.complete()) return CUDA_SUCCESS;
  const RelaxedCaptureMode relaxed(api_);
  MutexLock lock(mu_);
  CUresult first_error = CUDA_SUCCESS;
  bool capturing = false;
  std::vector<CUcontext> capturing_ctxs;
  std::vector<size_t> gone;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const CUresult r = WithContext(e.context, [&] {
      if (IsCapturing(e.stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      return api_.stream_synchronize(e.stream);
    });
    if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
      capturing = true;
      capturing_ctxs.push_back(e.context);
    } else if (Gone(r)) {
      gone.push_back(i);
    } else if (r != CUDA_SUCCESS && first_error == CUDA_SUCCESS) {
      first_error = r;
    }
  }
  for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
    entries_.erase(entries_.begin() + static_cast<long>(*it));
  }
  if (!gone.empty()) epoch_.fetch_add(1, std::memory_order_relaxed);
  // Per-thread default streams cannot be named from here: synchronise their whole context,
  // unless a stream of it is being captured (a context synchronise would invalidate it).
  for (CUcontext ctx : per_thread_ctxs_) {
    if (std::find(capturing_ctxs.begin(), capturing_ctxs.end(), ctx) != capturing_ctxs.end()) {
      continue;
    }
    const CUresult r = WithContext(ctx, [&] { return api_.ctx_synchronize(); });
    if (r != CUDA_SUCCESS && !Gone(r) && first_error == CUDA_SUCCESS) first_error = r;
  }
  if (first_error != CUDA_SUCCESS) return first_error;
  return capturing ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

void InflightTracker::ForgetStream(CUstream stream) {
  if (IsDefaultStream(stream) || stream == nullptr) return;
  MutexLock lock(mu_);
  const auto end = std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& e) { return e.stream == stream; });
  if (end == entries_.end()) return;
  entries_.erase(end, entries_.end());
  epoch_.fetch_add(1, std::memory_order_relaxed);
}

void InflightTracker::ForgetStreamAfterWork(CUstream stream) {
  if (IsDefaultStream(stream) || stream == nullptr || !api_.complete()) return;
  const RelaxedCaptureMode relaxed(api_);
  MutexLock lock(mu_);
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const Entry& e) { return e.stream == stream; });
  if (it == entries_.end()) return;
  (void)WithContext(it->context, [&] {
    if (IsCapturing(stream)) return CUDA_SUCCESS;
    return api_.stream_synchronize(stream);
  });
  entries_.erase(it);
  epoch_.fetch_add(1, std::memory_order_relaxed);
}

void InflightTracker::ForgetContext(CUcontext context) {
  MutexLock lock(mu_);
  ForgetContextLocked(context);
}

void InflightTracker::ForgetContextLocked(CUcontext context) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) { return e.context == context; }),
                 entries_.end());
  per_thread_ctxs_.erase(std::remove(per_thread_ctxs_.begin(), per_thread_ctxs_.end(), context),
                         per_thread_ctxs_.end());
  epoch_.fetch_add(1, std::memory_order_relaxed);
}

size_t InflightTracker::tracked() const {
  MutexLock lock(mu_);
  return entries_.size() + per_thread_ctxs_.size();
}

}  // namespace gshare::preload
