// The simcuda kernel set: names, parameter lists and launch geometry of the GPU kernels whose
// CUDA sources are in simcuda/kernels/src/*.cu (embedded as PTX, see ptx.h) and whose CPU twins
// form the plugin libsimcuda_kernels.so. Header-only constants for host programs; the full
// table (with costs) is in docs/simcuda-kernels.md.
//
// Parameter types (in order, as passed in kernelParams):
//   vector_add    (const float* a, const float* b, float* c, u64 n)          c = a + b
//   saxpy         (float alpha, const float* x, float* y, u64 n)             y = alpha*x + y
//   fill_u32      (u32* p, u64 n, u32 seed)                                  p[i] = FillPattern
//   checksum      (const u8* p, u64 nbytes, u64* out)                        *out += checksum
//   sleep_ns      (u64 ns)                                                   busy for ns
//   sgemm         (u32 M, u32 N, u32 K, float alpha, const float* A, const float* B,
//                  float beta, float* C)                  C = alpha*A*B + beta*C, row-major
//   sgemm_batched (u32 transb, u32 M, u32 N, u32 K, float alpha, const float* A, u32 lda,
//                  u64 strideA, const float* B, u32 ldb, u64 strideB, float beta, float* C,
//                  u32 ldc, u64 strideC, u32 batch)     per batch b: C_b = alpha*A_b*op(B_b) +
//                                                       beta*C_b, X_b = X + b*strideX (elements)
//   bias_act      (float* x, const float* bias, u32 rows, u32 cols, i32 act) act 0/1/2 =
//                                                                            none/ReLU/GELU
//   gelu          (float* x, u64 n)
//   softmax_rows  (float* x, u32 rows, u32 cols, float scale)
//   layernorm_rows(const float* x, float* y, const float* gamma, const float* beta,
//                  u32 rows, u32 cols, float eps)
//   embedding     (const i32* ids, const float* table, float* out, u32 n_ids, u32 dim,
//                  u32 vocab)
//   argmax_rows   (const float* x, i32* out, u32 rows, u32 cols)
//   transpose     (const float* in, float* out, u32 rows, u32 cols)
//   conv2d_3x3    (const float* in, const float* w, const float* bias, float* out, u32 batch,
//                  u32 cin, u32 h, u32 w, u32 cout, i32 relu)                NCHW, pad 1
//   maxpool_2x2   (const float* in, float* out, u32 batch, u32 channels, u32 h, u32 w)
// (u64 = unsigned long long, u32 = unsigned int, i32 = int, u8 = unsigned char.)
#ifndef SIMCUDA_KERNELS_KERNELS_H_
#define SIMCUDA_KERNELS_KERNELS_H_

namespace simcuda::kernels {

// Element-wise kernels (vector_add, saxpy, fill_u32, checksum, bias_act, gelu, embedding,
// transpose, conv2d_3x3, maxpool_2x2) loop grid-stride: any grid covers the range.
// checksum needs a power-of-two block size <= 1024.
inline constexpr unsigned kElementwiseBlock = 256;
inline constexpr unsigned kMaxElementwiseGrid = 4096;
// Row kernels (softmax_rows, layernorm_rows, argmax_rows): one block per row (grid-stride over
// rows), blockDim.x a power of two <= 1024.
inline constexpr unsigned kRowBlock = 256;
// sgemm, sgemm_batched: blockDim must be (kGemmTile, kGemmTile, 1); natural grid
// (ceil(N/16), ceil(M/16), 1), with gridDim.z = batch for sgemm_batched (any grid works).
inline constexpr unsigned kGemmTile = 16;

// bias_act's activation codes.
inline constexpr int kActNone = 0;
inline constexpr int kActRelu = 1;
inline constexpr int kActGelu = 2;

// A grid for an element-wise kernel over n elements.
constexpr unsigned ElementwiseGrid(unsigned long long n) {
  unsigned long long blocks = (n + kElementwiseBlock - 1) / kElementwiseBlock;
  if (blocks == 0) blocks = 1;
  return blocks > kMaxElementwiseGrid ? kMaxElementwiseGrid : static_cast<unsigned>(blocks);
}

}  // namespace simcuda::kernels

#endif  // SIMCUDA_KERNELS_KERNELS_H_
