// Helper process for the capacity test: in its own process, allocates BYTES on DEVICE with the
// plain driver API (no vGPU manager) and exits 0 on success, 3 on CUDA_ERROR_OUT_OF_MEMORY,
// 4 on any other error, 2 on bad arguments. Usage: simcuda_alloc_helper DEVICE BYTES
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int ordinal = std::atoi(argv[1]);
  const auto bytes = static_cast<size_t>(std::strtoull(argv[2], nullptr, 10));
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, ordinal) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, device) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    return 4;
  }
  CUdeviceptr p = 0;
  const CUresult rc = cuMemAlloc(&p, bytes);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY) return 3;
  if (rc != CUDA_SUCCESS) return 4;
  (void)cuMemFree(p);
  std::printf("ok\n");
  return 0;
}
