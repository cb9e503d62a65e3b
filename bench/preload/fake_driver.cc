// A do-nothing CUDA driver for measuring the shim's own per-call cost: every entry point the
// hook-overhead benchmark calls returns CUDA_SUCCESS at once, so "through the shim" minus
// "direct" is exactly what the hook adds. Loaded through GSHARE_REAL_LIBCUDA. The context and
// stream queries let the shim's in-flight tracker run (its per-submission cost is part of the
// hook's), with one fake context current on every thread.
#include <cuda.h>

#include <cstdint>

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
FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2(void*, CUdeviceptr, size_t, CUstream) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemsetD32Async(CUdeviceptr, unsigned int, size_t, CUstream) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void**, void**) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec, CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }

namespace {
CUcontext FakeContext() { return reinterpret_cast<CUcontext>(static_cast<uintptr_t>(0xC0)); }
}  // namespace

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = FakeContext();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (ctx != nullptr) *ctx = FakeContext();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuStreamGetCtx(CUstream, CUcontext* ctx) {
  *ctx = FakeContext();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamQuery(CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
