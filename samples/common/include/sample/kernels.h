// The GPU kernels the samples use, loaded from PTX with cuModuleLoadData (the simcuda kernel
// set's PTX, embedded at build time; simcuda runs their CPU twins, a real GPU runs the PTX),
// and typed launchers that compute each kernel's launch geometry. Signatures and semantics:
// docs/simcuda-kernels.md.
//
// A Launcher queues kernels on one stream and keeps the first launch error (later launches are
// skipped), so a model writes its forward pass as a straight sequence and checks once.
// Thread-safety: KernelSet is immutable after Load (share it); a Launcher is single-threaded.
#pragma once

#include <cuda.h>

#include <string>

#include "sample/device_buffer.h"

namespace sample {

class KernelSet {
 public:
  // REQUIRES: a current context. Loads the basic, gemm, nn and cnn modules. "" or an error.
  std::string Load();

  CUfunction vector_add = nullptr, sgemm = nullptr, sgemm_batched = nullptr,
             bias_act = nullptr, softmax_rows = nullptr, layernorm_rows = nullptr,
             embedding = nullptr, argmax_rows = nullptr, conv2d_3x3 = nullptr,
             maxpool_2x2 = nullptr;

 private:
  Module basic_, gemm_, nn_, cnn_;
};

// bias_act activation codes.
enum class Act : int { kNone = 0, kRelu = 1, kGelu = 2 };

class Launcher {
 public:
  using Ptr = CUdeviceptr;
  Launcher(const KernelSet& k, CUstream stream) : k_(k), stream_(stream) {}
  // Waits for the stream, so that when a request fails half-way no queued kernel or copy
  // outlives it (the next request reuses the same buffers). After a successful request the
  // stream is already idle and this returns at once.
  ~Launcher() { (void)cuStreamSynchronize(stream_); }
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // c[i] = a[i] + b[i], n elements.
  void VectorAdd(Ptr a, Ptr b, Ptr c, unsigned long long n);
  // C = alpha*A*B + beta*C (row-major; A MxK, B KxN, C MxN).
  void Sgemm(unsigned m, unsigned n, unsigned k, float alpha, Ptr a, Ptr b, float beta, Ptr c);
  // Per batch b: C_b = alpha*A_b*op(B_b) + beta*C_b (see sgemm_batched).
  struct Batched {
    bool transb = false;
    unsigned m = 0, n = 0, k = 0;
    float alpha = 1.0f, beta = 0.0f;
    Ptr a = 0, b = 0, c = 0;
    unsigned lda = 0, ldb = 0, ldc = 0;
    unsigned long long stride_a = 0, stride_b = 0, stride_c = 0;
    unsigned batch = 1;
  };
  void SgemmBatched(const Batched& g);
  // Multi-head attention without a mask: for each head h, out[:, h] = softmax(q_h k_h^T /
  // sqrt(head_dim)) v_h, with q, k, v rows `ld` floats apart (e.g. one fused QKV buffer),
  // head h at column h*head_dim. `scores` holds heads*queries*keys floats; out rows are
  // heads*head_dim floats apart.
  struct Attention {
    Ptr q = 0, k = 0, v = 0;
    unsigned ld = 0;
    unsigned queries = 0, keys = 0, heads = 0, head_dim = 0;
    Ptr scores = 0, out = 0;
  };
  void MultiHeadAttention(const Attention& a);
  // x[r][c] = act(x[r][c] + bias[c]).
  void BiasAct(Ptr x, Ptr bias, unsigned rows, unsigned cols, Act act);
  void SoftmaxRows(Ptr x, unsigned rows, unsigned cols, float scale);
  void LayerNormRows(Ptr x, Ptr y, Ptr gamma, Ptr beta, unsigned rows, unsigned cols);
  void Embedding(Ptr ids, Ptr table, Ptr out, unsigned n_ids, unsigned dim, unsigned vocab);
  void ArgmaxRows(Ptr x, Ptr out, unsigned rows, unsigned cols);
  void Conv3x3(Ptr in, Ptr w, Ptr bias, Ptr out, unsigned batch, unsigned cin, unsigned h,
               unsigned wd, unsigned cout, bool relu);
  void MaxPool2x2(Ptr in, Ptr out, unsigned batch, unsigned channels, unsigned h, unsigned wd);

  bool ok() const { return error_.empty(); }
  // The first failed launch, "" if none.
  const std::string& error() const { return error_; }
  // Number of kernels queued.
  unsigned long long launches() const { return launches_; }

 private:
  void Launch(CUfunction f, const char* name, unsigned gx, unsigned gy, unsigned gz,
              unsigned bx, unsigned by, void** params);

  const KernelSet& k_;
  CUstream stream_;
  std::string error_;
  unsigned long long launches_ = 0;
};

}  // namespace sample
