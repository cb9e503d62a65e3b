// Readable errors for simcuda-demo: records the first failing driver call as
// "cuMemAlloc(a) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)". Header-only.
// Not thread-safe: one checker per thread of work.
#ifndef SIMCUDA_DEMO_CUDA_STATUS_H_
#define SIMCUDA_DEMO_CUDA_STATUS_H_

#include <cuda.h>

#include <string>

namespace simcuda_demo {

// An error message; empty when all went well.
using Error = std::string;

// "" if r is CUDA_SUCCESS, else "<call> failed: <name> (<description>)".
inline Error CudaError(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return {};
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown error";
  if (cuGetErrorString(r, &text) != CUDA_SUCCESS || text == nullptr) text = "no description";
  return std::string(call) + " failed: " + name + " (" + text + ")";
}

// Keeps the first failure of a sequence of driver calls:
//   if (!cu.Ok(cuMemAlloc(&p, n), "cuMemAlloc(p)")) return cu.error();
class CallChecker {
 public:
  // True if `r` succeeded and no earlier call failed.
  bool Ok(CUresult r, const char* call) {
    if (error_.empty() && r != CUDA_SUCCESS) error_ = CudaError(r, call);
    return error_.empty();
  }
  const Error& error() const { return error_; }

 private:
  Error error_;
};

}  // namespace simcuda_demo

#endif  // SIMCUDA_DEMO_CUDA_STATUS_H_
