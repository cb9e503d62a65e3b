// preload_probe's stress mode: threads copying, launching checksum kernels and verifying on
// their own streams while a test swaps the vGPU out and in under them. Prints "started" once
// every thread holds its memory, then "done" and "errors=N".
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "data.h"
#include "driver.h"
#include "modes.h"
#include "simcuda/kernels/kernels.h"
#include "simcuda/kernels/ptx.h"

namespace gshare::probe {

int Stress(int threads, int iterations) {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  CUcontext ctx = nullptr;
  (void)cuCtxGetCurrent(&ctx);
  CUmodule module = nullptr;
  if (CUresult r = cuModuleLoadData(&module, basic_kernels_ptx); r != CUDA_SUCCESS) {
    return Fail("module", r);
  }
  CUfunction checksum = nullptr;
  (void)cuModuleGetFunction(&checksum, module, "checksum");
  std::atomic<int> errors{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      (void)cuCtxSetCurrent(ctx);
      CUstream stream = nullptr;
      CUdeviceptr buf = 0, out = 0;
      const size_t bytes = (1u << 20) + static_cast<size_t>(t) * 4096;
      if (cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
          cuMemAlloc(&buf, bytes) != CUDA_SUCCESS || cuMemAlloc(&out, 8) != CUDA_SUCCESS) {
        ++errors;
        ++ready;
        return;
      }
      ++ready;
      std::vector<uint8_t> data(bytes), back(bytes);
      for (int i = 0; i < iterations; ++i) {
        FillBytes(&data, static_cast<uint64_t>(t) * 1000003u + static_cast<uint64_t>(i));
        unsigned long long zero = 0, k1 = 0, k2 = 0;
        unsigned long long n = bytes;
        void* params[] = {&buf, &n, &out};
        const unsigned grid = simcuda::kernels::ElementwiseGrid(n);
        bool ok = cuMemcpyHtoDAsync(buf, data.data(), bytes, stream) == CUDA_SUCCESS &&
                  cuMemcpyHtoDAsync(out, &zero, 8, stream) == CUDA_SUCCESS &&
                  cuLaunchKernel(checksum, grid, 1, 1, simcuda::kernels::kElementwiseBlock, 1, 1,
                                 0, stream, params, nullptr) == CUDA_SUCCESS &&
                  cuMemcpyDtoHAsync(&k1, out, 8, stream) == CUDA_SUCCESS &&
                  cuMemcpyDtoHAsync(back.data(), buf, bytes, stream) == CUDA_SUCCESS &&
                  cuStreamSynchronize(stream) == CUDA_SUCCESS;
        // The same checksum again, now that the data may have been swapped out and back.
        ok = ok && cuMemcpyHtoDAsync(out, &zero, 8, stream) == CUDA_SUCCESS &&
             cuLaunchKernel(checksum, grid, 1, 1, simcuda::kernels::kElementwiseBlock, 1, 1, 0,
                            stream, params, nullptr) == CUDA_SUCCESS &&
             cuMemcpyDtoHAsync(&k2, out, 8, stream) == CUDA_SUCCESS &&
             cuStreamSynchronize(stream) == CUDA_SUCCESS;
        if (!ok || back != data || k1 != k2) ++errors;
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  std::printf("started\n");  // every thread holds its memory and is submitting
  std::fflush(stdout);
  for (auto& w : workers) w.join();
  std::printf("done\nerrors=%d\n", errors.load());
  std::fflush(stdout);  // the test tells "exiting" from "failing" by this line
  return 0;
}

}  // namespace gshare::probe
