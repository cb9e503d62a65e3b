// SubmissionScope: what every work-submitting hook does around the real call — be admitted by
// the submission gate (fast path: lock-free, no syscalls), and leave it on return.
//
// Usage (generated forwarders.cc):
//   const SubmissionScope scope;
//   if (!scope.admitted()) return scope.error();
//   scope.Note(hStream, /*per_thread=*/false);   // the in-flight tracker
//   return scope.real().cuLaunchKernel(...);
#pragma once

#include <cuda.h>

#include "hooks/export.h"
#include "runtime/runtime.h"

namespace gshare::preload {

class SubmissionScope {
 public:
  SubmissionScope() : rt_(Runtime::Get()) {
    if (rt_.gate().TryEnter(&slot_)) {
      entered_ = true;
      return;
    }
    error_ = rt_.AdmitSlow(&slot_);
    entered_ = error_ == CUDA_SUCCESS;
  }
  ~SubmissionScope() {
    if (entered_) rt_.gate().Exit(slot_);
  }
  SubmissionScope(const SubmissionScope&) = delete;
  SubmissionScope& operator=(const SubmissionScope&) = delete;

  [[nodiscard]] bool admitted() const { return entered_; }
  // Records the stream the admitted call submits to (inside the gate, before the real call, so
  // a drain that closes the gate afterwards sees it).
  void Note(CUstream stream, bool per_thread) const { rt_.inflight().Note(stream, per_thread); }
  [[nodiscard]] CUresult error() const { return error_; }
  [[nodiscard]] const RealDriver& real() const { return rt_.real(); }
  // What to return when the real driver lacks the entry point.
  [[nodiscard]] CUresult missing() const {
    return rt_.driver_loaded() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
  }

 private:
  Runtime& rt_;
  unsigned slot_ = 0;
  bool entered_ = false;
  CUresult error_ = CUDA_SUCCESS;
};

}  // namespace gshare::preload
