// ThreadState: the per-thread state of the submission fast path in one thread-local block — the
// thread's submission-gate slot and the in-flight tracker's cache of the last stream it
// submitted to — so a gated call reaches both with one initial-exec TLS address (one
// thread-pointer-relative access, no __tls_get_addr: libgshare.so is preloaded).
//
// Thread-safety: each thread touches only its own block.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace gshare::preload {

struct ThreadState {
  unsigned gate_slot = 0;  // SubmissionGate: 1 + the slot index, 0 until the first submission
  // InflightTracker's cache: the explicit stream this thread last noted and the tracker's epoch
  // then (never a default stream: those depend on the current context)...
  CUstream stream = nullptr;
  uint64_t epoch = ~uint64_t{0};
  // ... and the default stream it last noted (CU_STREAM_LEGACY or CU_STREAM_PER_THREAD), in
  // which context (the one current on the thread then), at which epoch. Valid only while that
  // context stays current: the hooks that can change the thread's current context clear it
  // (InflightTracker::CurrentContextChanged).
  CUstream default_stream = nullptr;
  CUcontext default_context = nullptr;
  uint64_t default_epoch = ~uint64_t{0};
};

inline ThreadState& ThisThread() {
  static constinit __attribute__((tls_model("initial-exec"))) thread_local ThreadState state;
  return state;
}

}  // namespace gshare::preload
