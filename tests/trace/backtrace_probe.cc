// backtrace_probe: an unmodified CUDA driver-API program for the shim's GSHARE_BACKTRACE test.
// It makes failing calls from functions of its own (whose names the backtrace must show):
//   backtrace_probe <repeat>   allocates more than any test quota (cuMemAlloc_v2, `repeat`
//                              times), launches a null kernel (cuLaunchKernel, a gated
//                              forwarder); then, after a pause longer than the rate limit's
//                              refill, fails once more. Prints "alloc=<CUresult>" and
//                              "launch=<CUresult>".
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

extern "C" {

// noinline and no tail calls: each must keep its own frame in the backtrace.
__attribute__((noinline)) int ApplicationAllocatesTooMuch() {
  CUdeviceptr p = 0;
  volatile CUresult r = cuMemAlloc(&p, size_t{64} << 30);
  return static_cast<int>(r);
}

__attribute__((noinline)) int ApplicationLaunchesANullKernel() {
  volatile CUresult r = cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
  return static_cast<int>(r);
}

}  // extern "C"

int main(int argc, char** argv) {
  const int repeat = argc > 1 ? std::atoi(argv[1]) : 1;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  int alloc = 0;
  for (int i = 0; i < repeat; ++i) alloc = ApplicationAllocatesTooMuch();
  const int launch = ApplicationLaunchesANullKernel();
  if (repeat > 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    alloc = ApplicationAllocatesTooMuch();
  }
  std::printf("alloc=%d\nlaunch=%d\n", alloc, launch);
  (void)cuDevicePrimaryCtxRelease(dev);
  return 0;
}
