// Loading the kernel modules and launching kernels with their geometry (see kernels.h).
#include "sample/kernels.h"

#include <cmath>

#include "sample/cuda_check.h"
#include "simcuda/kernels/kernels.h"
#include "simcuda/kernels/ptx.h"

namespace sample {
namespace {
namespace sk = simcuda::kernels;
using u64 = unsigned long long;
}  // namespace

std::string KernelSet::Load() {
  CallChecker cu;
  cu.Ok(cuModuleLoadData(basic_.out(), basic_kernels_ptx), "cuModuleLoadData(basic_kernels)");
  cu.Ok(cuModuleLoadData(gemm_.out(), gemm_ptx), "cuModuleLoadData(gemm)");
  cu.Ok(cuModuleLoadData(nn_.out(), nn_kernels_ptx), "cuModuleLoadData(nn_kernels)");
  cu.Ok(cuModuleLoadData(cnn_.out(), cnn_kernels_ptx), "cuModuleLoadData(cnn_kernels)");
  if (!cu.ok()) return cu.error();
  struct Entry {
    CUmodule module;
    const char* name;
    CUfunction* fn;
  };
  const Entry entries[] = {
      {basic_.get(), "vector_add", &vector_add},   {gemm_.get(), "sgemm", &sgemm},
      {gemm_.get(), "sgemm_batched", &sgemm_batched}, {nn_.get(), "bias_act", &bias_act},
      {nn_.get(), "softmax_rows", &softmax_rows},  {nn_.get(), "layernorm_rows", &layernorm_rows},
      {nn_.get(), "embedding", &embedding},        {nn_.get(), "argmax_rows", &argmax_rows},
      {cnn_.get(), "conv2d_3x3", &conv2d_3x3},     {cnn_.get(), "maxpool_2x2", &maxpool_2x2},
  };
  for (const Entry& e : entries) {
    const std::string call = std::string("cuModuleGetFunction(") + e.name + ")";
    if (!cu.Ok(cuModuleGetFunction(e.fn, e.module, e.name), call.c_str())) break;
  }
  return cu.error();
}

void Launcher::Launch(CUfunction f, const char* name, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, void** params) {
  if (!error_.empty()) return;
  const CUresult r = cuLaunchKernel(f, gx, gy, gz, bx, by, 1, 0, stream_, params, nullptr);
  if (r != CUDA_SUCCESS) {
    error_ = CudaError(r, (std::string("cuLaunchKernel(") + name + ")").c_str());
  }
  ++launches_;
}

void Launcher::VectorAdd(Ptr a, Ptr b, Ptr c, u64 n) {
  void* p[] = {&a, &b, &c, &n};
  Launch(k_.vector_add, "vector_add", sk::ElementwiseGrid(n), 1, 1, sk::kElementwiseBlock, 1, p);
}

void Launcher::Sgemm(unsigned m, unsigned n, unsigned k, float alpha, Ptr a, Ptr b, float beta,
                     Ptr c) {
  void* p[] = {&m, &n, &k, &alpha, &a, &b, &beta, &c};
  Launch(k_.sgemm, "sgemm", (n + sk::kGemmTile - 1) / sk::kGemmTile,
         (m + sk::kGemmTile - 1) / sk::kGemmTile, 1, sk::kGemmTile, sk::kGemmTile, p);
}

void Launcher::SgemmBatched(const Batched& g) {
  Batched v = g;
  unsigned transb = v.transb ? 1u : 0u;
  void* p[] = {&transb, &v.m,   &v.n,        &v.k,   &v.alpha,    &v.a,   &v.lda,      &v.stride_a,
               &v.b,    &v.ldb, &v.stride_b, &v.beta, &v.c,       &v.ldc, &v.stride_c, &v.batch};
  Launch(k_.sgemm_batched, "sgemm_batched", (v.n + sk::kGemmTile - 1) / sk::kGemmTile,
         (v.m + sk::kGemmTile - 1) / sk::kGemmTile, v.batch, sk::kGemmTile, sk::kGemmTile, p);
}

void Launcher::MultiHeadAttention(const Attention& a) {
  Batched sc;  // scores_h = q_h k_h^T: [heads][queries][keys]
  sc.transb = true;
  sc.m = a.queries, sc.n = a.keys, sc.k = a.head_dim;
  sc.a = a.q, sc.lda = a.ld, sc.stride_a = a.head_dim;
  sc.b = a.k, sc.ldb = a.ld, sc.stride_b = a.head_dim;
  sc.c = a.scores, sc.ldc = a.keys, sc.stride_c = u64{a.queries} * a.keys;
  sc.batch = a.heads;
  SgemmBatched(sc);
  SoftmaxRows(a.scores, a.heads * a.queries, a.keys,
              1.0f / std::sqrt(static_cast<float>(a.head_dim)));
  Batched cx;  // out[:, h] = P_h v_h
  cx.m = a.queries, cx.n = a.head_dim, cx.k = a.keys;
  cx.a = a.scores, cx.lda = a.keys, cx.stride_a = u64{a.queries} * a.keys;
  cx.b = a.v, cx.ldb = a.ld, cx.stride_b = a.head_dim;
  cx.c = a.out, cx.ldc = a.heads * a.head_dim, cx.stride_c = a.head_dim;
  cx.batch = a.heads;
  SgemmBatched(cx);
}

void Launcher::BiasAct(Ptr x, Ptr bias, unsigned rows, unsigned cols, Act act) {
  int a = static_cast<int>(act);
  void* p[] = {&x, &bias, &rows, &cols, &a};
  Launch(k_.bias_act, "bias_act", sk::ElementwiseGrid(u64{rows} * cols), 1, 1,
         sk::kElementwiseBlock, 1, p);
}

void Launcher::SoftmaxRows(Ptr x, unsigned rows, unsigned cols, float scale) {
  void* p[] = {&x, &rows, &cols, &scale};
  Launch(k_.softmax_rows, "softmax_rows", rows, 1, 1, sk::kRowBlock, 1, p);
}

void Launcher::LayerNormRows(Ptr x, Ptr y, Ptr gamma, Ptr beta, unsigned rows, unsigned cols) {
  float eps = 1e-5f;
  void* p[] = {&x, &y, &gamma, &beta, &rows, &cols, &eps};
  Launch(k_.layernorm_rows, "layernorm_rows", rows, 1, 1, sk::kRowBlock, 1, p);
}

void Launcher::Embedding(Ptr ids, Ptr table, Ptr out, unsigned n_ids, unsigned dim,
                         unsigned vocab) {
  void* p[] = {&ids, &table, &out, &n_ids, &dim, &vocab};
  Launch(k_.embedding, "embedding", sk::ElementwiseGrid(u64{n_ids} * dim), 1, 1,
         sk::kElementwiseBlock, 1, p);
}

void Launcher::ArgmaxRows(Ptr x, Ptr out, unsigned rows, unsigned cols) {
  void* p[] = {&x, &out, &rows, &cols};
  Launch(k_.argmax_rows, "argmax_rows", rows, 1, 1, sk::kRowBlock, 1, p);
}

void Launcher::Conv3x3(Ptr in, Ptr w, Ptr bias, Ptr out, unsigned batch, unsigned cin,
                       unsigned h, unsigned wd, unsigned cout, bool relu) {
  int r = relu ? 1 : 0;
  void* p[] = {&in, &w, &bias, &out, &batch, &cin, &h, &wd, &cout, &r};
  Launch(k_.conv2d_3x3, "conv2d_3x3", sk::ElementwiseGrid(u64{batch} * cout * h * wd), 1, 1,
         sk::kElementwiseBlock, 1, p);
}

void Launcher::MaxPool2x2(Ptr in, Ptr out, unsigned batch, unsigned channels, unsigned h,
                          unsigned wd) {
  void* p[] = {&in, &out, &batch, &channels, &h, &wd};
  Launch(k_.maxpool_2x2, "maxpool_2x2", sk::ElementwiseGrid(u64{batch} * channels * (h / 2) * (wd / 2)),
         1, 1, sk::kElementwiseBlock, 1, p);
}

}  // namespace sample
