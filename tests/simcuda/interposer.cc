// A stand-in for an LD_PRELOAD shim: exports cuMemAlloc_v2 and always fails it with
// CUDA_ERROR_UNKNOWN, so tests can tell whether a call reached the "shim" or simcuda.
#include <cuda.h>

extern "C" __attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  (void)dptr;
  (void)bytesize;
  return CUDA_ERROR_UNKNOWN;
}
