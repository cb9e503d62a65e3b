// Readable driver errors for the sample servers: "cuMemAlloc(weights) failed:
// CUDA_ERROR_OUT_OF_MEMORY (out of memory)". A failure is a std::string; empty means success.
// CallChecker keeps the first failure of a sequence of calls. Not thread-safe (one per thread).
#pragma once

#include <cuda.h>

#include <string>

namespace sample {

// "" if r is CUDA_SUCCESS, else "<call> failed: <name> (<description>)".
std::string CudaError(CUresult r, const char* call);

class CallChecker {
 public:
  // True if r succeeded and no earlier call failed; records the first failure.
  bool Ok(CUresult r, const char* call) {
    if (error_.empty() && r != CUDA_SUCCESS) error_ = CudaError(r, call);
    return error_.empty();
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace sample
