// preload_probe's kernels mode: the sample kernels (vector_add, saxpy, sgemm) on a stream, their
// results' checksums printed, so that a test can compare runs with and without the shim.
#include <cstdio>
#include <vector>

#include "data.h"
#include "driver.h"
#include "modes.h"
#include "simcuda/kernels/kernels.h"
#include "simcuda/kernels/ptx.h"

namespace gshare::probe {

int Kernels() {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  CUmodule basic = nullptr, gemm = nullptr;
  if (CUresult r = cuModuleLoadData(&basic, basic_kernels_ptx); r != CUDA_SUCCESS) {
    return Fail("module", r);
  }
  if (CUresult r = cuModuleLoadData(&gemm, gemm_ptx); r != CUDA_SUCCESS) return Fail("module", r);
  const unsigned n = 1 << 16;
  std::vector<float> a(n), b(n);
  for (unsigned i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 97) * 0.5f;
    b[i] = static_cast<float>(i % 31) * -0.25f;
  }
  CUdeviceptr da = 0, db = 0, dc = 0;
  if (cuMemAlloc(&da, n * 4) != CUDA_SUCCESS || cuMemAlloc(&db, n * 4) != CUDA_SUCCESS ||
      cuMemAlloc(&dc, n * 4) != CUDA_SUCCESS) {
    return Fail("alloc", CUDA_ERROR_OUT_OF_MEMORY);
  }
  CUstream stream = nullptr;
  (void)cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  (void)cuMemcpyHtoDAsync(da, a.data(), n * 4, stream);
  (void)cuMemcpyHtoDAsync(db, b.data(), n * 4, stream);
  CUfunction add = nullptr, saxpy = nullptr, sgemm = nullptr;
  (void)cuModuleGetFunction(&add, basic, "vector_add");
  (void)cuModuleGetFunction(&saxpy, basic, "saxpy");
  (void)cuModuleGetFunction(&sgemm, gemm, "sgemm");
  unsigned long long nn = n;
  void* add_params[] = {&da, &db, &dc, &nn};
  const unsigned grid = simcuda::kernels::ElementwiseGrid(n);
  const unsigned block = simcuda::kernels::kElementwiseBlock;
  if (CUresult r = cuLaunchKernel(add, grid, 1, 1, block, 1, 1, 0, stream, add_params, nullptr);
      r != CUDA_SUCCESS) {
    return Fail("vector_add", r);
  }
  float alpha = 1.5f;
  void* saxpy_params[] = {&alpha, &da, &dc, &nn};
  if (CUresult r = cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, stream, saxpy_params, nullptr);
      r != CUDA_SUCCESS) {
    return Fail("saxpy", r);
  }
  // sgemm: C(64x64) = A(64x128) * B(128x64), A and B taken from the vectors above.
  unsigned M = 64, N = 64, K = 128;
  float one = 1.0f, zero = 0.0f;
  CUdeviceptr dC = 0;
  if (cuMemAlloc(&dC, M * N * 4) != CUDA_SUCCESS) return Fail("alloc", CUDA_ERROR_OUT_OF_MEMORY);
  void* gemm_params[] = {&M, &N, &K, &one, &da, &db, &zero, &dC};
  const unsigned tile = simcuda::kernels::kGemmTile;
  if (CUresult r = cuLaunchKernel(sgemm, (N + tile - 1) / tile, (M + tile - 1) / tile, 1, tile,
                                  tile, 1, 0, stream, gemm_params, nullptr);
      r != CUDA_SUCCESS) {
    return Fail("sgemm", r);
  }
  std::vector<float> c(n), C(M * N);
  (void)cuMemcpyDtoHAsync(c.data(), dc, n * 4, stream);
  (void)cuMemcpyDtoHAsync(C.data(), dC, M * N * 4, stream);
  if (CUresult r = cuStreamSynchronize(stream); r != CUDA_SUCCESS) return Fail("sync", r);
  std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(c.data()),
                             reinterpret_cast<uint8_t*>(c.data()) + c.size() * 4);
  std::printf("vector_saxpy=%016llx\n", static_cast<unsigned long long>(Checksum(bytes)));
  bytes.assign(reinterpret_cast<uint8_t*>(C.data()),
               reinterpret_cast<uint8_t*>(C.data()) + C.size() * 4);
  std::printf("sgemm=%016llx\n", static_cast<unsigned long long>(Checksum(bytes)));
  std::printf("c1=%g\n", static_cast<double>(c[1]));
  return 0;
}

}  // namespace gshare::probe
