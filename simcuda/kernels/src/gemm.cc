// CPU twin of gemm.cu's sgemm: C = alpha * A * B + beta * C, row-major (A: M x K, B: K x N,
// C: M x N), C not read when beta == 0. Like the GPU version, each output accumulates
// A[i][k] * B[k][j] for k = 0..K-1 in order into a float, then applies alpha and beta.
// Blocked for the cache: a kRows x kCols accumulator tile is filled panel by panel of B, whose
// rows are streamed contiguously (the innermost loop vectorises).
#include <algorithm>
#include <vector>

#include "kernel_args.h"
#include "kernel_tables.h"

namespace simcuda::kernels {
namespace {

constexpr unsigned kRows = 32;   // accumulator tile rows
constexpr unsigned kCols = 256;  // accumulator tile columns (1 KiB of each B row)

void Sgemm(const SimcudaLaunchDims*, void* const* p) {
  const unsigned m = Arg<unsigned>(p, 0), n = Arg<unsigned>(p, 1), k = Arg<unsigned>(p, 2);
  const float alpha = Arg<float>(p, 3);
  const float* a = Arg<const float*>(p, 4);
  const float* b = Arg<const float*>(p, 5);
  const float beta = Arg<float>(p, 6);
  float* c = Arg<float*>(p, 7);
  std::vector<float> acc(size_t{kRows} * kCols);
  for (unsigned j0 = 0; j0 < n; j0 += kCols) {
    const unsigned nj = std::min(kCols, n - j0);
    for (unsigned i0 = 0; i0 < m; i0 += kRows) {
      const unsigned ni = std::min(kRows, m - i0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (unsigned kk = 0; kk < k; ++kk) {
        const float* brow = b + size_t{kk} * n + j0;
        for (unsigned i = 0; i < ni; ++i) {
          const float aik = a[size_t{i0 + i} * k + kk];
          float* arow = acc.data() + size_t{i} * kCols;
          for (unsigned j = 0; j < nj; ++j) arow[j] += aik * brow[j];
        }
      }
      for (unsigned i = 0; i < ni; ++i) {
        float* crow = c + size_t{i0 + i} * n + j0;
        const float* arow = acc.data() + size_t{i} * kCols;
        if (beta == 0.0f) {
          for (unsigned j = 0; j < nj; ++j) crow[j] = alpha * arow[j];
        } else {
          for (unsigned j = 0; j < nj; ++j) crow[j] = alpha * arow[j] + beta * crow[j];
        }
      }
    }
  }
}

SimcudaKernelCost SgemmCost(const SimcudaLaunchDims*, void* const* p) {
  const double m = Arg<unsigned>(p, 0), n = Arg<unsigned>(p, 1), k = Arg<unsigned>(p, 2);
  const bool reads_c = Arg<float>(p, 6) != 0.0f;
  // 2MNK multiply-adds plus the alpha/beta epilogue; each matrix crosses memory once.
  const double flops = 2.0 * m * n * k + (reads_c ? 3.0 : 1.0) * m * n;
  const double bytes = 4.0 * (m * k + k * n + (reads_c ? 2.0 : 1.0) * m * n);
  return Work(flops, bytes);
}

constexpr SimcudaKernelDesc kTable[] = {
    Describe<unsigned, unsigned, unsigned, float, const float*, const float*, float, float*>(
        "sgemm", Sgemm, SgemmCost),
};

}  // namespace

std::span<const SimcudaKernelDesc> GemmKernels() { return kTable; }

}  // namespace simcuda::kernels
