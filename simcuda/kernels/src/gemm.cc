// CPU twins of gemm.cu: sgemm (C = alpha * A * B + beta * C, row-major, A: M x K, B: K x N,
// C: M x N) and sgemm_batched (strided batches, leading dimensions, optional transposed B).
// C is not read when beta == 0. Like the GPU versions, each output accumulates
// A[i][k] * op(B)[k][j] for k = 0..K-1 in order into a float, then applies alpha and beta.
// Speed: B is packed panel by panel (256 columns, in blocks of 16 columns stored k-major) so a
// 4 x 16 micro-tile reads it contiguously, with its accumulators in SIMD registers for the whole
// k loop; the packed panel stays in cache while every row of A sweeps it. Edge tiles use fewer
// rows and zero-padded columns (same order of operations). A transposed B is transposed while
// packing.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernel_args.h"
#include "kernel_tables.h"

namespace simcuda::kernels {
namespace {

using u64 = unsigned long long;
constexpr unsigned kPanelCols = 256;  // columns of B kept hot in cache while rows sweep it
constexpr unsigned kMr = 4;            // micro-tile rows
constexpr unsigned kNr = 16;           // micro-tile columns (4 vectors of 4 floats)

// Four floats as one SIMD value (SSE on x86-64, NEON on aarch64), through GCC's vector extension.
typedef float V4 __attribute__((vector_size(16)));

V4 LoadV4(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

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

// C[i0..i0+R) x [j0..j0+cols), cols <= 16, from packed = op(B)[0..K)[j0..j0+16) stored k-major
// (16 floats per k, zero-padded past the matrix). The accumulators stay in registers for the
// whole k loop.
template <unsigned R>
void MicroTile(const Gemm& g, unsigned i0, unsigned j0, unsigned cols, const float* packed) {
  V4 acc[R][kNr / 4] = {};
  const float* a = g.a + i0 * g.lda;
  for (unsigned kk = 0; kk < g.k; ++kk) {
    const float* brow = packed + size_t{kk} * kNr;
    const V4 b0 = LoadV4(brow), b1 = LoadV4(brow + 4), b2 = LoadV4(brow + 8),
             b3 = LoadV4(brow + 12);
    for (unsigned r = 0; r < R; ++r) {
      const float av = a[r * g.lda + kk];
      const V4 a4 = {av, av, av, av};
      acc[r][0] += a4 * b0;
      acc[r][1] += a4 * b1;
      acc[r][2] += a4 * b2;
      acc[r][3] += a4 * b3;
    }
  }
  for (unsigned r = 0; r < R; ++r) {
    float* crow = g.c + (i0 + r) * g.ldc + j0;
    for (unsigned j = 0; j < cols; ++j) crow[j] = Epilogue(g, acc[r][j / 4][j % 4], crow[j]);
  }
}

// Copies the columns [j0, j1) of op(B) into `packed`: for each block of 16 columns, K rows of 16
// contiguous floats, the last block zero-padded.
void PackPanel(const Gemm& g, unsigned j0, unsigned j1, float* packed) {
  for (unsigned jb = j0; jb < j1; jb += kNr) {
    const unsigned cols = std::min(kNr, j1 - jb);
    for (unsigned kk = 0; kk < g.k; ++kk) {
      if (!g.transb && cols == kNr) {
        std::memcpy(packed, g.b + kk * g.ldb + jb, kNr * sizeof(float));
      } else {
        for (unsigned e = 0; e < kNr; ++e) {
          const unsigned j = jb + e;
          packed[e] = e >= cols ? 0.0f : g.transb ? g.b[j * g.ldb + kk] : g.b[kk * g.ldb + j];
        }
      }
      packed += kNr;
    }
  }
}

// Rows [i0, i0 + rows) of one panel, rows <= kMr.
void PanelRows(const Gemm& g, unsigned i0, unsigned rows, unsigned p0, unsigned p1,
               const float* packed) {
  for (unsigned jb = p0; jb < p1; jb += kNr) {
    const unsigned cols = std::min(kNr, p1 - jb);
    const float* block = packed + size_t{g.k} * (jb - p0);
    switch (rows) {
      case 4: MicroTile<4>(g, i0, jb, cols, block); break;
      case 3: MicroTile<3>(g, i0, jb, cols, block); break;
      case 2: MicroTile<2>(g, i0, jb, cols, block); break;
      default: MicroTile<1>(g, i0, jb, cols, block); break;
    }
  }
}

void RunGemm(const Gemm& g) {
  std::vector<float> packed;
  for (unsigned p0 = 0; p0 < g.n; p0 += kPanelCols) {
    const unsigned p1 = std::min(g.n, p0 + kPanelCols);
    packed.resize(size_t{g.k} * ((p1 - p0 + kNr - 1) / kNr * kNr));
    PackPanel(g, p0, p1, packed.data());
    for (unsigned i0 = 0; i0 < g.m; i0 += kMr) {
      PanelRows(g, i0, std::min(kMr, g.m - i0), p0, p1, packed.data());
    }
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
  RunGemm(g);
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
  for (unsigned b = 0; b < batch; ++b) {
    Gemm one = g;
    one.a += b * stride_a;
    one.b += b * stride_b;
    one.c += b * stride_c;
    RunGemm(one);
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
