// CPU twins of gemm.cu: sgemm (C = alpha * A * B + beta * C, row-major, A: M x K, B: K x N,
// C: M x N) and sgemm_batched (strided batches, leading dimensions, optional transposed B).
// C is not read when beta == 0. Like the GPU versions, each output accumulates
// A[i][k] * op(B)[k][j] for k = 0..K-1 in order into a float, then applies alpha and beta.
// Blocked for the cache: a kRows x kCols accumulator tile is filled from rows of B streamed
// contiguously (the innermost loop vectorises); with B transposed, each output is a dot product
// of two contiguous rows.
#include <algorithm>
#include <vector>

#include "kernel_args.h"
#include "kernel_tables.h"

namespace simcuda::kernels {
namespace {

using u64 = unsigned long long;
constexpr unsigned kRows = 32;   // accumulator tile rows
constexpr unsigned kCols = 256;  // accumulator tile columns (1 KiB of each B row)

struct Gemm {
  unsigned m, n, k;
  float alpha;
  const float* a;
  size_t lda;
  const float* b;
  size_t ldb;
  bool transb;
  float beta;
  float* c;
  size_t ldc;
};

float Epilogue(const Gemm& g, float acc, float old) {
  return g.beta == 0.0f ? g.alpha * acc : g.alpha * acc + g.beta * old;
}

void GemmNN(const Gemm& g, std::vector<float>* scratch) {
  scratch->resize(size_t{kRows} * kCols);
  float* const acc = scratch->data();
  const float* const a = g.a;
  const float* const b = g.b;
  const size_t lda = g.lda, ldb = g.ldb;
  for (unsigned j0 = 0; j0 < g.n; j0 += kCols) {
    const unsigned nj = std::min(kCols, g.n - j0);
    for (unsigned i0 = 0; i0 < g.m; i0 += kRows) {
      const unsigned ni = std::min(kRows, g.m - i0);
      std::fill(acc, acc + size_t{kRows} * kCols, 0.0f);
      for (unsigned kk = 0; kk < g.k; ++kk) {
        const float* __restrict brow = b + kk * ldb + j0;
        for (unsigned i = 0; i < ni; ++i) {
          const float aik = a[(i0 + i) * lda + kk];
          float* __restrict arow = acc + size_t{i} * kCols;
          for (unsigned j = 0; j < nj; ++j) arow[j] += aik * brow[j];
        }
      }
      for (unsigned i = 0; i < ni; ++i) {
        float* crow = g.c + (i0 + i) * g.ldc + j0;
        const float* arow = acc + size_t{i} * kCols;
        for (unsigned j = 0; j < nj; ++j) crow[j] = Epilogue(g, arow[j], crow[j]);
      }
    }
  }
}

void GemmNT(const Gemm& g) {
  for (unsigned i = 0; i < g.m; ++i) {
    const float* arow = g.a + i * g.lda;
    for (unsigned j = 0; j < g.n; ++j) {
      const float* brow = g.b + j * g.ldb;  // op(B)[k][j] = B[j][k]
      float acc = 0.0f;
      for (unsigned kk = 0; kk < g.k; ++kk) acc += arow[kk] * brow[kk];
      float* c = g.c + i * g.ldc + j;
      *c = Epilogue(g, acc, *c);
    }
  }
}

void RunGemm(const Gemm& g, std::vector<float>* scratch) {
  if (g.transb) {
    GemmNT(g);
  } else {
    GemmNN(g, scratch);
  }
}

SimcudaKernelCost GemmCost(double batch, double m, double n, double k, bool reads_c) {
  // 2MNK multiply-adds plus the alpha/beta epilogue; each matrix crosses memory once.
  const double flops = 2.0 * m * n * k + (reads_c ? 3.0 : 1.0) * m * n;
  const double bytes = 4.0 * (m * k + k * n + (reads_c ? 2.0 : 1.0) * m * n);
  return Work(batch * flops, batch * bytes);
}

// sgemm(M, N, K, alpha, A, B, beta, C)
void Sgemm(const SimcudaLaunchDims*, void* const* p) {
  const unsigned m = Arg<unsigned>(p, 0), n = Arg<unsigned>(p, 1), k = Arg<unsigned>(p, 2);
  Gemm g{m,     n, k, Arg<float>(p, 3), Arg<const float*>(p, 4), k, Arg<const float*>(p, 5),
         n,     false, Arg<float>(p, 6), Arg<float*>(p, 7), n};
  std::vector<float> scratch;
  RunGemm(g, &scratch);
}
SimcudaKernelCost SgemmCost(const SimcudaLaunchDims*, void* const* p) {
  return GemmCost(1.0, Arg<unsigned>(p, 0), Arg<unsigned>(p, 1), Arg<unsigned>(p, 2),
                  Arg<float>(p, 6) != 0.0f);
}

// sgemm_batched(transb, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
//               strideC, batch)
void SgemmBatched(const SimcudaLaunchDims*, void* const* p) {
  Gemm g{Arg<unsigned>(p, 1),  Arg<unsigned>(p, 2),  Arg<unsigned>(p, 3),
         Arg<float>(p, 4),     Arg<const float*>(p, 5), Arg<unsigned>(p, 6),
         Arg<const float*>(p, 8), Arg<unsigned>(p, 9), Arg<unsigned>(p, 0) != 0,
         Arg<float>(p, 11),    Arg<float*>(p, 12),   Arg<unsigned>(p, 13)};
  const u64 stride_a = Arg<u64>(p, 7), stride_b = Arg<u64>(p, 10), stride_c = Arg<u64>(p, 14);
  const unsigned batch = Arg<unsigned>(p, 15);
  std::vector<float> scratch;
  for (unsigned b = 0; b < batch; ++b) {
    Gemm one = g;
    one.a += b * stride_a;
    one.b += b * stride_b;
    one.c += b * stride_c;
    RunGemm(one, &scratch);
  }
}
SimcudaKernelCost SgemmBatchedCost(const SimcudaLaunchDims*, void* const* p) {
  return GemmCost(Arg<unsigned>(p, 15), Arg<unsigned>(p, 1), Arg<unsigned>(p, 2),
                  Arg<unsigned>(p, 3), Arg<float>(p, 11) != 0.0f);
}

using F = const float*;
using U = unsigned;
constexpr SimcudaKernelDesc kTable[] = {
    Describe<U, U, U, float, F, F, float, float*>("sgemm", Sgemm, SgemmCost),
    Describe<U, U, U, U, float, F, U, u64, F, U, u64, float, float*, U, u64, U>(
        "sgemm_batched", SgemmBatched, SgemmBatchedCost),
};

}  // namespace

std::span<const SimcudaKernelDesc> GemmKernels() { return kTable; }

}  // namespace simcuda::kernels
