// Tests of the CPU twins in libsimcuda_kernels.so, loaded through the registry as simcuda loads
// them: each kernel against a straightforward reference, parameter sizes, and costs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_registry.h"
#include "simcuda/kernels/kernel_math.h"
#include "simcuda/kernels/kernels.h"

namespace simcuda {
namespace {

using u64 = unsigned long long;

class CpuKernelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { registry_ = new KernelRegistry(SIMCUDA_KERNELS_PLUGIN); }
  static void TearDownTestSuite() {
    delete registry_;
    registry_ = nullptr;
  }

  // Runs kernel `name` with the given argument addresses (as kernelParams) after checking
  // that the plugin declares exactly these parameter sizes.
  static SimcudaKernelCost Run(const char* name, std::vector<void*> params,
                               std::vector<size_t> sizes) {
    const SimcudaKernelDesc* d = registry_->Find(name);
    EXPECT_NE(d, nullptr) << name << ": " << registry_->error();
    if (d == nullptr) return {};
    EXPECT_EQ(d->num_params, params.size()) << name;
    for (size_t i = 0; i < sizes.size() && i < d->num_params; ++i) {
      EXPECT_EQ(d->param_sizes[i], sizes[i]) << name << " param " << i;
    }
    SimcudaLaunchDims dims{{1, 1, 1}, {256, 1, 1}, 0};
    SimcudaKernelCost cost = d->cost(&dims, params.data());
    d->run(&dims, params.data());
    return cost;
  }

  static std::vector<float> Random(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  }

  static KernelRegistry* registry_;
};
KernelRegistry* CpuKernelsTest::registry_ = nullptr;

constexpr size_t P = sizeof(void*);

TEST_F(CpuKernelsTest, PluginLoadsCleanlyWithEveryKernel) {
  EXPECT_EQ(registry_->error(), "");
  EXPECT_EQ(registry_->Names(),
            (std::vector<std::string>{"argmax_rows", "bias_act", "checksum", "conv2d_3x3",
                                      "embedding", "fill_u32", "gelu", "layernorm_rows",
                                      "maxpool_2x2", "saxpy", "sgemm", "sgemm_batched", "sleep_ns",
                                      "softmax_rows",
                                      "transpose", "vector_add"}));
}

TEST_F(CpuKernelsTest, VectorAdd) {
  auto a = Random(1001, 1), b = Random(1001, 2);
  std::vector<float> c(1001, -7.0f);
  const float *pa = a.data(), *pb = b.data();
  float* pc = c.data();
  u64 n = 1000;  // the last element must stay untouched
  auto cost = Run("vector_add", {&pa, &pb, &pc, &n}, {P, P, P, 8});
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  EXPECT_EQ(c[1000], -7.0f);
  EXPECT_DOUBLE_EQ(cost.flops, 1000.0);
  EXPECT_DOUBLE_EQ(cost.bytes, 12000.0);
  EXPECT_DOUBLE_EQ(cost.fixed_ns, 0.0);
}

TEST_F(CpuKernelsTest, Saxpy) {
  auto x = Random(500, 3), y = Random(500, 4);
  auto expect = y;
  float alpha = 2.5f;
  for (size_t i = 0; i < y.size(); ++i) expect[i] = alpha * x[i] + y[i];
  const float* px = x.data();
  float* py = y.data();
  u64 n = y.size();
  auto cost = Run("saxpy", {&alpha, &px, &py, &n}, {4, P, P, 8});
  EXPECT_EQ(y, expect);
  EXPECT_DOUBLE_EQ(cost.flops, 1000.0);
}

TEST_F(CpuKernelsTest, FillU32IsSeededAndDeterministic) {
  std::vector<unsigned> a(257), b(257);
  unsigned* pa = a.data();
  u64 n = a.size();
  unsigned seed = 7;
  Run("fill_u32", {&pa, &n, &seed}, {P, 8, 4});
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], simcuda::kernels::FillPattern(7, i));
  unsigned* pb = b.data();
  seed = 8;
  Run("fill_u32", {&pb, &n, &seed}, {P, 8, 4});
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 3u);  // different seeds give different patterns
}

// Reference checksum written byte by byte from the definition in kernel_math.h.
u64 ReferenceChecksum(const std::vector<unsigned char>& bytes, size_t n) {
  u64 sum = n;
  for (size_t j = 0; j * 8 < n; ++j) {
    u64 word = 0;
    for (size_t k = 0; k < 8 && j * 8 + k < n; ++k) word |= u64{bytes[j * 8 + k]} << (8 * k);
    sum += simcuda::kernels::Mix64(word ^ (j * 0x9e3779b97f4a7c15ULL));
  }
  return sum;
}

TEST_F(CpuKernelsTest, ChecksumMatchesDefinitionAndDetectsChanges) {
  std::vector<unsigned char> data(1000);
  std::mt19937 rng(5);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (u64 n : {u64{0}, u64{1}, u64{7}, u64{8}, u64{999}, u64{1000}}) {
    u64 out = 0;
    const unsigned char* p = data.data();
    u64 nbytes = n;
    u64* pout = &out;
    Run("checksum", {&p, &nbytes, &pout}, {P, 8, P});
    EXPECT_EQ(out, ReferenceChecksum(data, n)) << n;
    EXPECT_EQ(out, simcuda::kernels::HostChecksum(data.data(), n)) << n;
  }
  u64 before = simcuda::kernels::HostChecksum(data.data(), data.size());
  std::swap(data[10], data[900]);  // moved bytes change the sum
  EXPECT_NE(simcuda::kernels::HostChecksum(data.data(), data.size()), before);
}

TEST_F(CpuKernelsTest, ChecksumAccumulatesIntoOutput) {
  std::vector<unsigned char> data(64, 0xab);
  u64 out = 100;
  const unsigned char* p = data.data();
  u64 n = data.size();
  u64* pout = &out;
  Run("checksum", {&p, &n, &pout}, {P, 8, P});
  EXPECT_EQ(out, 100 + simcuda::kernels::HostChecksum(data.data(), data.size()));
}

TEST_F(CpuKernelsTest, SleepNsDeclaresItsDuration) {
  u64 ns = 1234567;
  auto cost = Run("sleep_ns", {&ns}, {8});
  EXPECT_DOUBLE_EQ(cost.fixed_ns, 1234567.0);
  EXPECT_DOUBLE_EQ(cost.flops, 0.0);
  EXPECT_DOUBLE_EQ(cost.bytes, 0.0);
}

void ReferenceGemm(unsigned m, unsigned n, unsigned k, float alpha, const std::vector<float>& a,
                   const std::vector<float>& b, float beta, std::vector<float>& c) {
  for (unsigned i = 0; i < m; ++i) {
    for (unsigned j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (unsigned kk = 0; kk < k; ++kk) acc += a[size_t{i} * k + kk] * b[size_t{kk} * n + j];
      float& out = c[size_t{i} * n + j];
      out = beta == 0.0f ? alpha * acc : alpha * acc + beta * out;
    }
  }
}

TEST_F(CpuKernelsTest, SgemmMatchesReferenceOnOddShapes) {
  struct Shape { unsigned m, n, k; float alpha, beta; };
  for (Shape s : {Shape{1, 1, 1, 1.0f, 0.0f}, Shape{37, 300, 19, 0.5f, 2.0f},
                  Shape{70, 513, 64, 1.0f, 1.0f}, Shape{3, 5, 0, 1.0f, 0.5f}}) {
    auto a = Random(size_t{s.m} * s.k, 10), b = Random(size_t{s.k} * s.n, 11);
    auto c = Random(size_t{s.m} * s.n, 12);
    auto expect = c;
    ReferenceGemm(s.m, s.n, s.k, s.alpha, a, b, s.beta, expect);
    const float *pa = a.data(), *pb = b.data();
    float* pc = c.data();
    auto cost = Run("sgemm", {&s.m, &s.n, &s.k, &s.alpha, &pa, &pb, &s.beta, &pc},
                    {4, 4, 4, 4, P, P, 4, P});
    // Same summation order as the reference: exact.
    ASSERT_EQ(c, expect) << s.m << "x" << s.n << "x" << s.k;
    EXPECT_GE(cost.flops, 2.0 * s.m * s.n * s.k);
  }
}

TEST_F(CpuKernelsTest, SgemmBetaZeroIgnoresNanInC) {
  unsigned m = 4, n = 4, k = 4;
  float alpha = 1.0f, beta = 0.0f;
  auto a = Random(16, 13), b = Random(16, 14);
  std::vector<float> c(16, std::numeric_limits<float>::quiet_NaN());
  const float *pa = a.data(), *pb = b.data();
  float* pc = c.data();
  Run("sgemm", {&m, &n, &k, &alpha, &pa, &pb, &beta, &pc}, {});
  for (float v : c) EXPECT_FALSE(std::isnan(v));
}

TEST_F(CpuKernelsTest, SgemmBatchedWithStridesLeadingDimensionsAndTransposedB) {
  // Multi-head attention shapes: 3 heads of width 20 inside rows of width 60 (shapes with both
  // full 4 x 16 micro-tiles and edges).
  //   transb = 1: scores S_h = Q_h * K_h^T (seq x seq, dense per head; lda = ldb = hidden).
  //   transb = 0: O_h = P * V_h with one P shared by all heads (stride 0, lda = hidden), written
  //               into the head's columns of a seq x hidden output (ldc = hidden).
  const unsigned heads = 3, seq = 21, dh = 20, hidden = heads * dh;
  auto q = Random(seq * hidden, 40), kmat = Random(seq * hidden, 41);
  for (unsigned transb : {1u, 0u}) {
    unsigned m = seq, n = transb ? seq : dh, k = transb ? dh : seq;
    unsigned lda = hidden, ldb = hidden, ldc = transb ? seq : hidden;
    u64 stride_a = transb ? dh : 0, stride_b = dh, stride_c = transb ? u64{seq} * seq : dh;
    auto a = transb ? q : Random(seq * hidden, 42);
    std::vector<float> c(transb ? heads * seq * seq : seq * hidden, 0.25f);
    auto expect = c;
    float alpha = 0.5f, beta = transb ? 0.0f : 1.0f;
    for (unsigned h = 0; h < heads; ++h) {
      for (unsigned i = 0; i < m; ++i) {
        for (unsigned j = 0; j < n; ++j) {
          float acc = 0.0f;
          for (unsigned kk = 0; kk < k; ++kk) {
            float av = a[h * stride_a + i * lda + kk];
            float bv = transb ? kmat[h * stride_b + j * ldb + kk] : kmat[h * stride_b + kk * ldb + j];
            acc += av * bv;
          }
          float& out = expect[h * stride_c + i * ldc + j];
          out = beta == 0.0f ? alpha * acc : alpha * acc + beta * out;
        }
      }
    }
    const float *pa = a.data(), *pb = kmat.data();
    float* pc = c.data();
    unsigned batch = heads;
    auto cost = Run("sgemm_batched",
                    {&transb, &m, &n, &k, &alpha, &pa, &lda, &stride_a, &pb, &ldb, &stride_b,
                     &beta, &pc, &ldc, &stride_c, &batch},
                    {4, 4, 4, 4, 4, P, 4, 8, P, 4, 8, 4, P, 4, 8, 4});
    ASSERT_EQ(c, expect) << "transb=" << transb;
    EXPECT_GE(cost.flops, 2.0 * heads * m * n * k);
  }
}

float RefGelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

TEST_F(CpuKernelsTest, BiasActAllActivations) {
  unsigned rows = 3, cols = 5;
  auto bias = Random(cols, 20);
  for (int act : {simcuda::kernels::kActNone, simcuda::kernels::kActRelu,
                  simcuda::kernels::kActGelu}) {
    auto x = Random(rows * cols, 21);
    auto orig = x;
    float* px = x.data();
    const float* pb = bias.data();
    Run("bias_act", {&px, &pb, &rows, &cols, &act}, {P, P, 4, 4, 4});
    for (unsigned i = 0; i < rows * cols; ++i) {
      float v = orig[i] + bias[i % cols];
      float want = act == 0 ? v : act == 1 ? std::max(v, 0.0f) : RefGelu(v);
      EXPECT_FLOAT_EQ(x[i], want) << act << " " << i;
    }
  }
}

TEST_F(CpuKernelsTest, Gelu) {
  auto x = Random(100, 22, -4.0f, 4.0f);
  auto orig = x;
  float* px = x.data();
  u64 n = x.size();
  Run("gelu", {&px, &n}, {P, 8});
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(x[i], RefGelu(orig[i]));
  EXPECT_NEAR(RefGelu(1.0f), 0.8412f, 1e-3);  // known value of tanh-GELU
}

TEST_F(CpuKernelsTest, SoftmaxRowsSumToOneAndMatchReference) {
  unsigned rows = 4, cols = 33;
  float scale = 0.5f;
  auto x = Random(rows * cols, 23, -10.0f, 10.0f);
  auto orig = x;
  float* px = x.data();
  Run("softmax_rows", {&px, &rows, &cols, &scale}, {P, 4, 4, 4});
  for (unsigned r = 0; r < rows; ++r) {
    double denom = 0.0;
    for (unsigned c = 0; c < cols; ++c) denom += std::exp(double{scale} * double{orig[r * cols + c]});
    double total = 0.0;
    for (unsigned c = 0; c < cols; ++c) {
      double want = std::exp(double{scale} * double{orig[r * cols + c]}) / denom;
      EXPECT_NEAR(x[r * cols + c], want, 1e-6);
      total += double{x[r * cols + c]};
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST_F(CpuKernelsTest, LayernormRows) {
  unsigned rows = 3, cols = 64;
  float eps = 1e-5f;
  auto x = Random(rows * cols, 24, -3.0f, 5.0f);
  auto gamma = Random(cols, 25, 0.5f, 1.5f), beta = Random(cols, 26);
  std::vector<float> y(rows * cols);
  const float *px = x.data(), *pg = gamma.data(), *pbeta = beta.data();
  float* py = y.data();
  Run("layernorm_rows", {&px, &py, &pg, &pbeta, &rows, &cols, &eps}, {P, P, P, P, 4, 4, 4});
  for (unsigned r = 0; r < rows; ++r) {
    auto at = [&](unsigned c) { return double{x[r * cols + c]}; };
    double mean = 0, var = 0;
    for (unsigned c = 0; c < cols; ++c) mean += at(c);
    mean /= cols;
    for (unsigned c = 0; c < cols; ++c) var += (at(c) - mean) * (at(c) - mean);
    var /= cols;
    for (unsigned c = 0; c < cols; ++c) {
      double want = (at(c) - mean) / std::sqrt(var + double{eps}) * double{gamma[c]} +
                    double{beta[c]};
      EXPECT_NEAR(y[r * cols + c], want, 1e-4);
    }
  }
}

TEST_F(CpuKernelsTest, EmbeddingLooksUpRowsAndZeroesBadIds) {
  unsigned vocab = 10, dim = 6, n_ids = 4;
  auto table = Random(vocab * dim, 27);
  std::vector<int> ids = {3, 0, -1, 10};
  std::vector<float> out(n_ids * dim, 99.0f);
  const int* pi = ids.data();
  const float* pt = table.data();
  float* po = out.data();
  Run("embedding", {&pi, &pt, &po, &n_ids, &dim, &vocab}, {P, P, P, 4, 4, 4});
  for (unsigned d = 0; d < dim; ++d) {
    EXPECT_EQ(out[0 * dim + d], table[3 * dim + d]);
    EXPECT_EQ(out[1 * dim + d], table[0 * dim + d]);
    EXPECT_EQ(out[2 * dim + d], 0.0f);
    EXPECT_EQ(out[3 * dim + d], 0.0f);
  }
}

TEST_F(CpuKernelsTest, ArgmaxRowsPicksLowestIndexOnTies) {
  unsigned rows = 3, cols = 5;
  std::vector<float> x = {1, 5, 2, 5, 0,  -3, -2, -1, -4, -5,  7, 7, 7, 7, 7};
  std::vector<int> out(rows, -9);
  const float* px = x.data();
  int* po = out.data();
  Run("argmax_rows", {&px, &po, &rows, &cols}, {P, P, 4, 4});
  EXPECT_EQ(out, (std::vector<int>{1, 2, 0}));
}

TEST_F(CpuKernelsTest, Transpose) {
  unsigned rows = 37, cols = 70;
  auto in = Random(rows * cols, 28);
  std::vector<float> out(rows * cols);
  const float* pi = in.data();
  float* po = out.data();
  Run("transpose", {&pi, &po, &rows, &cols}, {P, P, 4, 4});
  for (unsigned r = 0; r < rows; ++r) {
    for (unsigned c = 0; c < cols; ++c) ASSERT_EQ(out[c * rows + r], in[r * cols + c]);
  }
}

TEST_F(CpuKernelsTest, Conv2d3x3MatchesDirectReference) {
  unsigned batch = 2, cin = 3, h = 7, w = 9, cout = 4;
  auto in = Random(batch * cin * h * w, 29), wt = Random(cout * cin * 9, 30);
  auto bias = Random(cout, 31);
  for (int relu : {0, 1}) {
    std::vector<float> out(batch * cout * h * w);
    const float *pi = in.data(), *pw = wt.data(), *pb = bias.data();
    float* po = out.data();
    Run("conv2d_3x3", {&pi, &pw, &pb, &po, &batch, &cin, &h, &w, &cout, &relu},
        {P, P, P, P, 4, 4, 4, 4, 4, 4});
    for (unsigned n = 0; n < batch; ++n) {
      for (unsigned co = 0; co < cout; ++co) {
        for (unsigned y = 0; y < h; ++y) {
          for (unsigned x = 0; x < w; ++x) {
            float acc = bias[co];
            for (unsigned ci = 0; ci < cin; ++ci) {
              for (int ky = 0; ky < 3; ++ky) {
                for (int kx = 0; kx < 3; ++kx) {
                  int iy = int(y) + ky - 1, ix = int(x) + kx - 1;
                  if (iy < 0 || iy >= int(h) || ix < 0 || ix >= int(w)) continue;
                  acc += in[((n * cin + ci) * h + iy) * w + ix] * wt[(co * cin + ci) * 9 + ky * 3 + kx];
                }
              }
            }
            if (relu && acc < 0) acc = 0;
            ASSERT_EQ(out[((n * cout + co) * h + y) * w + x], acc)
                << n << " " << co << " " << y << " " << x;
          }
        }
      }
    }
  }
}

TEST_F(CpuKernelsTest, MaxPool2x2) {
  unsigned batch = 1, channels = 2, h = 5, w = 4;  // odd height: last row dropped
  auto in = Random(batch * channels * h * w, 32);
  std::vector<float> out(channels * 2 * 2);
  const float* pi = in.data();
  float* po = out.data();
  Run("maxpool_2x2", {&pi, &po, &batch, &channels, &h, &w}, {P, P, 4, 4, 4, 4});
  for (unsigned c = 0; c < channels; ++c) {
    for (unsigned y = 0; y < 2; ++y) {
      for (unsigned x = 0; x < 2; ++x) {
        const float* p = &in[(c * h + 2 * y) * w + 2 * x];
        float want = std::max({p[0], p[1], p[w], p[w + 1]});
        EXPECT_EQ(out[(c * 2 + y) * 2 + x], want);
      }
    }
  }
}

}  // namespace
}  // namespace simcuda
