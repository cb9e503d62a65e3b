// CPU twins of nn_kernels.cu: bias_act, gelu, softmax_rows, layernorm_rows, embedding,
// argmax_rows, transpose. Same float32 formulas as the GPU versions; reductions run
// sequentially here and as trees on a GPU, so sums may differ in the last bits.
#include <cmath>
#include <limits>

#include "kernel_args.h"
#include "kernel_tables.h"

namespace simcuda::kernels {
namespace {

using u64 = unsigned long long;

float Gelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

void BiasAct(const SimcudaLaunchDims*, void* const* p) {
  float* x = Arg<float*>(p, 0);
  const float* bias = Arg<const float*>(p, 1);
  const unsigned rows = Arg<unsigned>(p, 2), cols = Arg<unsigned>(p, 3);
  const int act = Arg<int>(p, 4);
  for (unsigned r = 0; r < rows; ++r) {
    float* row = x + size_t{r} * cols;
    for (unsigned c = 0; c < cols; ++c) row[c] += bias[c];
    if (act == 1) {
      for (unsigned c = 0; c < cols; ++c) row[c] = row[c] < 0.0f ? 0.0f : row[c];
    } else if (act == 2) {
      for (unsigned c = 0; c < cols; ++c) row[c] = Gelu(row[c]);
    }
  }
}
SimcudaKernelCost BiasActCost(const SimcudaLaunchDims*, void* const* p) {
  const double rows = Arg<unsigned>(p, 2), cols = Arg<unsigned>(p, 3);
  const double per = Arg<int>(p, 4) == 2 ? 9.0 : 2.0;  // GELU: ~8 flops + tanh
  return Work(per * rows * cols, 8.0 * rows * cols + 4.0 * cols);
}

void GeluKernel(const SimcudaLaunchDims*, void* const* p) {
  float* x = Arg<float*>(p, 0);
  const u64 n = Arg<u64>(p, 1);
  for (u64 i = 0; i < n; ++i) x[i] = Gelu(x[i]);
}
SimcudaKernelCost GeluCost(const SimcudaLaunchDims*, void* const* p) {
  const double n = static_cast<double>(Arg<u64>(p, 1));
  return Work(8.0 * n, 8.0 * n);
}

void SoftmaxRows(const SimcudaLaunchDims*, void* const* p) {
  float* x = Arg<float*>(p, 0);
  const unsigned rows = Arg<unsigned>(p, 1), cols = Arg<unsigned>(p, 2);
  const float scale = Arg<float>(p, 3);
  for (unsigned r = 0; r < rows; ++r) {
    float* row = x + size_t{r} * cols;
    float m = -std::numeric_limits<float>::infinity();
    for (unsigned c = 0; c < cols; ++c) m = std::fmax(m, scale * row[c]);
    float s = 0.0f;
    for (unsigned c = 0; c < cols; ++c) {
      row[c] = std::exp(scale * row[c] - m);
      s += row[c];
    }
    for (unsigned c = 0; c < cols; ++c) row[c] /= s;
  }
}
SimcudaKernelCost SoftmaxRowsCost(const SimcudaLaunchDims*, void* const* p) {
  const double n = static_cast<double>(Arg<unsigned>(p, 1)) * Arg<unsigned>(p, 2);
  return Work(6.0 * n, 16.0 * n);  // read twice, write twice
}

void LayernormRows(const SimcudaLaunchDims*, void* const* p) {
  const float* x = Arg<const float*>(p, 0);
  float* y = Arg<float*>(p, 1);
  const float* gamma = Arg<const float*>(p, 2);
  const float* beta = Arg<const float*>(p, 3);
  const unsigned rows = Arg<unsigned>(p, 4), cols = Arg<unsigned>(p, 5);
  const float eps = Arg<float>(p, 6);
  for (unsigned r = 0; r < rows; ++r) {
    const float* in = x + size_t{r} * cols;
    float* out = y + size_t{r} * cols;
    float s = 0.0f;
    for (unsigned c = 0; c < cols; ++c) s += in[c];
    const float mean = s / static_cast<float>(cols);
    float v = 0.0f;
    for (unsigned c = 0; c < cols; ++c) v += (in[c] - mean) * (in[c] - mean);
    const float inv = 1.0f / std::sqrt(v / static_cast<float>(cols) + eps);
    for (unsigned c = 0; c < cols; ++c) out[c] = (in[c] - mean) * inv * gamma[c] + beta[c];
  }
}
SimcudaKernelCost LayernormRowsCost(const SimcudaLaunchDims*, void* const* p) {
  const double rows = Arg<unsigned>(p, 4), cols = Arg<unsigned>(p, 5);
  return Work(8.0 * rows * cols, 12.0 * rows * cols + 8.0 * cols);
}

void Embedding(const SimcudaLaunchDims*, void* const* p) {
  const int* ids = Arg<const int*>(p, 0);
  const float* table = Arg<const float*>(p, 1);
  float* out = Arg<float*>(p, 2);
  const unsigned n_ids = Arg<unsigned>(p, 3), dim = Arg<unsigned>(p, 4);
  const unsigned vocab = Arg<unsigned>(p, 5);
  for (unsigned i = 0; i < n_ids; ++i) {
    float* row = out + size_t{i} * dim;
    const int id = ids[i];
    const bool valid = id >= 0 && static_cast<unsigned>(id) < vocab;
    const float* src = valid ? table + static_cast<size_t>(id) * dim : nullptr;
    for (unsigned d = 0; d < dim; ++d) row[d] = valid ? src[d] : 0.0f;
  }
}
SimcudaKernelCost EmbeddingCost(const SimcudaLaunchDims*, void* const* p) {
  const double n = Arg<unsigned>(p, 3), dim = Arg<unsigned>(p, 4);
  return Work(0.0, 8.0 * n * dim + 4.0 * n);
}

void ArgmaxRows(const SimcudaLaunchDims*, void* const* p) {
  const float* x = Arg<const float*>(p, 0);
  int* out = Arg<int*>(p, 1);
  const unsigned rows = Arg<unsigned>(p, 2), cols = Arg<unsigned>(p, 3);
  for (unsigned r = 0; r < rows; ++r) {
    const float* row = x + size_t{r} * cols;
    float best = -std::numeric_limits<float>::infinity();
    int index = cols > 0 ? 0 : -1;
    for (unsigned c = 0; c < cols; ++c) {
      if (row[c] > best) {
        best = row[c];
        index = static_cast<int>(c);
      }
    }
    out[r] = index;
  }
}
SimcudaKernelCost ArgmaxRowsCost(const SimcudaLaunchDims*, void* const* p) {
  const double rows = Arg<unsigned>(p, 2), cols = Arg<unsigned>(p, 3);
  return Work(rows * cols, 4.0 * rows * cols + 4.0 * rows);
}

void Transpose(const SimcudaLaunchDims*, void* const* p) {
  const float* in = Arg<const float*>(p, 0);
  float* out = Arg<float*>(p, 1);
  const unsigned rows = Arg<unsigned>(p, 2), cols = Arg<unsigned>(p, 3);
  constexpr unsigned kBlock = 32;  // square blocks keep both sides in cache
  for (unsigned r0 = 0; r0 < rows; r0 += kBlock) {
    for (unsigned c0 = 0; c0 < cols; c0 += kBlock) {
      for (unsigned r = r0; r < rows && r < r0 + kBlock; ++r) {
        for (unsigned c = c0; c < cols && c < c0 + kBlock; ++c) {
          out[size_t{c} * rows + r] = in[size_t{r} * cols + c];
        }
      }
    }
  }
}
SimcudaKernelCost TransposeCost(const SimcudaLaunchDims*, void* const* p) {
  return Work(0.0, 8.0 * Arg<unsigned>(p, 2) * Arg<unsigned>(p, 3));
}

using F = const float*;
using W = float*;
using U = unsigned;
constexpr SimcudaKernelDesc kTable[] = {
    Describe<W, F, U, U, int>("bias_act", BiasAct, BiasActCost),
    Describe<W, u64>("gelu", GeluKernel, GeluCost),
    Describe<W, U, U, float>("softmax_rows", SoftmaxRows, SoftmaxRowsCost),
    Describe<F, W, F, F, U, U, float>("layernorm_rows", LayernormRows, LayernormRowsCost),
    Describe<const int*, F, W, U, U, U>("embedding", Embedding, EmbeddingCost),
    Describe<F, int*, U, U>("argmax_rows", ArgmaxRows, ArgmaxRowsCost),
    Describe<F, W, U, U>("transpose", Transpose, TransposeCost),
};

}  // namespace

std::span<const SimcudaKernelDesc> NnKernels() { return kTable; }

}  // namespace simcuda::kernels
