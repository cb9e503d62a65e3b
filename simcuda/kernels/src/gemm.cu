// Tiled single-precision GEMMs of the simcuda kernel set (sgemm, sgemm_batched); CPU twins in
// gemm.cc.
//   sgemm(M, N, K, alpha, A, B, beta, C):  C = alpha * A * B + beta * C
// Row-major, no transposes: A is M x K, B is K x N, C is M x N (leading dimensions K, N, N).
// When beta == 0, C is not read (NaNs in C do not propagate), as in cuBLAS.
// Launch with blockDim = (16, 16, 1); any grid works (tiles are visited grid-stride), the
// natural one is (ceil(N / 16), ceil(M / 16), 1). Each output sums k = 0..K-1 in order.
#define TILE 16

// One block's share of C = alpha * A * op(B) + beta * C (op(B) = B, or B^T stored N x K when
// transb), tiles visited grid-stride in x (columns) and y (rows).
__device__ void GemmTiles(bool transb, unsigned M, unsigned N, unsigned K, float alpha,
                          const float* A, unsigned lda, const float* B, unsigned ldb, float beta,
                          float* C, unsigned ldc) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];  // Bs[k][j] = op(B)[k0 + k][tn * TILE + j]
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const unsigned tiles_m = (M + TILE - 1) / TILE, tiles_n = (N + TILE - 1) / TILE;
  for (unsigned tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
    for (unsigned tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
      const unsigned row = tm * TILE + ty, col = tn * TILE + tx;
      float acc = 0.0f;
      for (unsigned k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * lda + k0 + tx] : 0.0f;
        if (transb) {
          const unsigned j = tn * TILE + ty, k = k0 + tx;  // coalesced along k
          Bs[tx][ty] = (j < N && k < K) ? B[(size_t)j * ldb + k] : 0.0f;
        } else {
          Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * ldb + col] : 0.0f;
        }
        __syncthreads();
        const unsigned kmax = K - k0 < TILE ? K - k0 : TILE;
        for (unsigned k = 0; k < kmax; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
      }
      if (row < M && col < N) {
        float* c = &C[(size_t)row * ldc + col];
        *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
      }
    }
  }
}

extern "C" __global__ void sgemm(unsigned int M, unsigned int N, unsigned int K, float alpha,
                                 const float* A, const float* B, float beta, float* C) {
  GemmTiles(false, M, N, K, alpha, A, K, B, N, beta, C, N);
}

// Strided batched GEMM with an optional transposed B, for attention (one launch for all heads):
//   for b in [0, batch):  C_b = alpha * A_b * op(B_b) + beta * C_b
// where X_b = X + b * strideX (strides and leading dimensions in elements), A_b is M x K with
// leading dimension lda, C_b is M x N with ldc, and op(B_b) is K x N: B_b[k * ldb + j] when
// transb == 0, B_b[j * ldb + k] (B_b stored N x K) otherwise. C is not read when beta == 0.
// Launch with blockDim = (16, 16, 1); any grid works (tiles grid-stride in x/y, batches in z).
extern "C" __global__ void sgemm_batched(unsigned int transb, unsigned int M, unsigned int N,
                                         unsigned int K, float alpha, const float* A,
                                         unsigned int lda, unsigned long long strideA,
                                         const float* B, unsigned int ldb,
                                         unsigned long long strideB, float beta, float* C,
                                         unsigned int ldc, unsigned long long strideC,
                                         unsigned int batch) {
  for (unsigned b = blockIdx.z; b < batch; b += gridDim.z) {
    GemmTiles(transb != 0, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb, beta,
              C + b * strideC, ldc);
  }
}
