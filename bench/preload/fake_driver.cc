// A do-nothing CUDA driver for measuring the shim's own per-call cost: every entry point the
// hook-overhead benchmark calls returns CUDA_SUCCESS at once, so "through the shim" minus
// "direct" is exactly what the hook adds. Loaded through GSHARE_REAL_LIBCUDA.
#include <cuda.h>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char*, void** pfn, int, cuuint64_t,
                                         CUdriverProcAddressQueryResult* status) {
  if (pfn != nullptr) *pfn = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, unsigned int, unsigned int,
                                    CUstream, void**, void**) {
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream) {
  return CUDA_SUCCESS;
}
