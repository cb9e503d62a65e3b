// Driver error messages for the samples (see cuda_check.h).
#include "sample/cuda_check.h"

namespace sample {

std::string CudaError(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return {};
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown error";
  if (cuGetErrorString(r, &text) != CUDA_SUCCESS || text == nullptr) text = "no description";
  return std::string(call) + " failed: " + name + " (" + text + ")";
}

}  // namespace sample
