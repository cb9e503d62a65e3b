// preload_probe's bursts mode: a function serving requests, as co-running sees one: `count`
// bursts, each a kernel busy for `kernel_ms` on a stream of its own (then synchronised), with
// `gap_ms` of idleness between them. Prints one line per burst with its start and end on
// CLOCK_MONOTONIC (so a test can tell whether two processes' bursts overlapped), then
// "mps_enabled=" (the driver's CU_DEVICE_ATTRIBUTE_MPS_ENABLED) and "done errors=N".
#include <time.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "driver.h"
#include "modes.h"
#include "simcuda/kernels/ptx.h"

namespace gshare::probe {
namespace {

unsigned long long MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<unsigned long long>(ts.tv_nsec);
}

}  // namespace

int Bursts(int count, int kernel_ms, int gap_ms) {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  CUdevice dev = 0;
  int mps = -1;
  (void)cuDeviceGet(&dev, 0);
  (void)cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, dev);
  std::printf("mps_enabled=%d\n", mps);
  CUmodule module = nullptr;
  if (CUresult r = cuModuleLoadData(&module, basic_kernels_ptx); r != CUDA_SUCCESS) {
    return Fail("module", r);
  }
  CUfunction sleep_fn = nullptr;
  if (CUresult r = cuModuleGetFunction(&sleep_fn, module, "sleep_ns"); r != CUDA_SUCCESS) {
    return Fail("function", r);
  }
  CUstream stream = nullptr;
  if (CUresult r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
    return Fail("stream", r);
  }
  std::printf("started\n");
  std::fflush(stdout);
  int errors = 0;
  unsigned long long ns = static_cast<unsigned long long>(kernel_ms) * 1'000'000ULL;
  void* params[] = {&ns};
  for (int i = 0; i < count; ++i) {
    const unsigned long long start = MonotonicNs();
    CUresult r = cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(stream);
    if (r != CUDA_SUCCESS) ++errors;
    std::printf("burst=%d start_ns=%llu end_ns=%llu result=%d\n", i, start, MonotonicNs(),
                static_cast<int>(r));
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  }
  std::printf("done errors=%d\n", errors);
  std::fflush(stdout);
  return errors == 0 ? 0 : 1;
}

}  // namespace gshare::probe
