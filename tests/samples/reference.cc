// Host references of the sample models (see reference.h). Mirrors the layer structure
// documented in samples/*/..._model.h, not the kernels' code.
#include "reference.h"

#include <algorithm>
#include <cmath>

#include "bert/bert_model.h"
#include "cnn/cnn_model.h"
#include "llm/llm_model.h"
#include "sample/weights.h"

namespace sample_test {
namespace {

using Vec = std::vector<double>;

// Elements [first, first + n) of a weight tensor.
Vec Weights(uint64_t seed, uint32_t id, float offset, float scale, uint64_t first, uint64_t n) {
  const uint64_t base = sample::WeightBase(seed, id);
  Vec w(n);
  for (uint64_t i = 0; i < n; ++i) w[i] = sample::WeightAt(base, first + i, offset, scale);
  return w;
}
Vec Weights(uint64_t seed, uint32_t id, float offset, float scale, uint64_t n) {
  return Weights(seed, id, offset, scale, 0, n);
}

// y[rows x n] = x[rows x k] * w[k x n] (+ bias).
Vec MatMul(const Vec& x, size_t rows, size_t k, const Vec& w, size_t n, const Vec* bias = nullptr) {
  Vec y(rows * n, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < k; ++i) {
      const double a = x[r * k + i];
      for (size_t j = 0; j < n; ++j) y[r * n + j] += a * w[i * n + j];
    }
    if (bias != nullptr) {
      for (size_t j = 0; j < n; ++j) y[r * n + j] += (*bias)[j];
    }
  }
  return y;
}

Vec LayerNorm(const Vec& x, size_t rows, size_t n, const Vec& g, const Vec& b) {
  Vec y(x.size());
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (size_t j = 0; j < n; ++j) mean += x[r * n + j];
    mean /= static_cast<double>(n);
    for (size_t j = 0; j < n; ++j) var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(n) + 1e-5);
    for (size_t j = 0; j < n; ++j) y[r * n + j] = (x[r * n + j] - mean) * inv * g[j] + b[j];
  }
  return y;
}

double Gelu(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x))); }

// Attention of `queries` query rows against `keys` key/value rows, heads of size dh, no mask.
// q, k, v: rows x (heads*dh).
Vec Attention(const Vec& q, const Vec& k, const Vec& v, size_t queries, size_t keys, size_t heads,
              size_t dh) {
  const size_t d = heads * dh;
  Vec out(queries * d, 0.0);
  for (size_t h = 0; h < heads; ++h) {
    for (size_t i = 0; i < queries; ++i) {
      Vec s(keys);
      double m = -1e300;
      for (size_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (size_t c = 0; c < dh; ++c) dot += q[i * d + h * dh + c] * k[j * d + h * dh + c];
        s[j] = dot / std::sqrt(static_cast<double>(dh));
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - m));
      for (size_t j = 0; j < keys; ++j) {
        for (size_t c = 0; c < dh; ++c) out[i * d + h * dh + c] += s[j] / sum * v[j * d + h * dh + c];
      }
    }
  }
  return out;
}

// Conv 3x3, pad 1, + bias, ReLU; then 2x2 max pooling. in: cin x n x n.
Vec ConvReluPool(const Vec& in, size_t cin, size_t n, const Vec& w, const Vec& b, size_t cout) {
  Vec pooled(cout * (n / 2) * (n / 2));
  Vec plane(n * n);
  for (size_t co = 0; co < cout; ++co) {
    for (size_t y = 0; y < n; ++y) {
      for (size_t x = 0; x < n; ++x) {
        double acc = b[co];
        for (size_t ci = 0; ci < cin; ++ci) {
          for (int ky = 0; ky < 3; ++ky) {
            for (int kx = 0; kx < 3; ++kx) {
              const long iy = static_cast<long>(y) + ky - 1, ix = static_cast<long>(x) + kx - 1;
              if (iy < 0 || ix < 0 || iy >= static_cast<long>(n) || ix >= static_cast<long>(n)) continue;
              acc += w[(co * cin + ci) * 9 + static_cast<size_t>(ky * 3 + kx)] *
                     in[(ci * n + static_cast<size_t>(iy)) * n + static_cast<size_t>(ix)];
            }
          }
        }
        plane[y * n + x] = std::max(acc, 0.0);
      }
    }
    for (size_t y = 0; y < n / 2; ++y) {
      for (size_t x = 0; x < n / 2; ++x) {
        pooled[(co * (n / 2) + y) * (n / 2) + x] =
            std::max({plane[2 * y * n + 2 * x], plane[2 * y * n + 2 * x + 1],
                      plane[(2 * y + 1) * n + 2 * x], plane[(2 * y + 1) * n + 2 * x + 1]});
      }
    }
  }
  return pooled;
}

}  // namespace

std::vector<double> CnnLogits(uint64_t seed, const std::vector<float>& image) {
  using namespace sample_cnn;
  // Tensor ids and scales as listed in docs/samples.md.
  const Vec in(image.begin(), image.end());
  const Vec p1 = ConvReluPool(in, kChannels, kSize, Weights(seed, 0, 0, 0.33f, kC1 * kChannels * 9),
                              Weights(seed, 1, 0, 0.05f, kC1), kC1);
  const Vec p2 = ConvReluPool(p1, kC1, kSize / 2, Weights(seed, 2, 0, 0.14f, kC2 * kC1 * 9),
                              Weights(seed, 3, 0, 0.05f, kC2), kC2);
  const Vec b1 = Weights(seed, 5, 0, 0.05f, kHidden);
  Vec h = MatMul(p2, 1, kFeatures, Weights(seed, 4, 0, 0.038f, uint64_t{kFeatures} * kHidden), kHidden, &b1);
  for (double& v : h) v = std::max(v, 0.0);
  const Vec b2 = Weights(seed, 7, 0, 0.05f, kClasses);
  return MatMul(h, 1, kHidden, Weights(seed, 6, 0, 0.024f, uint64_t{kHidden} * kClasses), kClasses, &b2);
}

std::vector<double> BertEmbedding(uint64_t seed, const std::vector<int32_t>& ids) {
  using namespace sample_bert;
  const size_t s = ids.size(), d = kHidden, q3 = 3 * kHidden;
  Vec x(s * d);
  const Vec pos = Weights(seed, kPos, 0, 0.1f, s * d);
  for (size_t i = 0; i < s; ++i) {
    const Vec row = Weights(seed, kTok, 0, 1.0f, static_cast<uint64_t>(ids[i]) * d, d);
    for (size_t j = 0; j < d; ++j) x[i * d + j] = row[j] + pos[i * d + j];
  }
  x = LayerNorm(x, s, d, Weights(seed, kEmbLnG, 1, 0.1f, d), Weights(seed, kEmbLnB, 0, 0.02f, d));
  for (unsigned l = 0; l < kLayers; ++l) {
    auto W = [&](uint32_t t, float off, float scale, uint64_t n) {
      return Weights(seed, LayerTensorId(l, t), off, scale, n);
    };
    const Vec bqkv = W(kBqkv, 0, 0.02f, q3);
    const Vec qkv = MatMul(x, s, d, W(kWqkv, 0, 0.153f, d * q3), q3, &bqkv);
    Vec q(s * d), k(s * d), v(s * d);
    for (size_t i = 0; i < s; ++i) {
      for (size_t j = 0; j < d; ++j) {
        q[i * d + j] = qkv[i * q3 + j];
        k[i * d + j] = qkv[i * q3 + d + j];
        v[i * d + j] = qkv[i * q3 + 2 * d + j];
      }
    }
    const Vec ctx = Attention(q, k, v, s, s, kHeads, kHeadDim);
    const Vec bo = W(kBo, 0, 0.02f, d);
    Vec a = MatMul(ctx, s, d, W(kWo, 0, 0.153f, d * d), d, &bo);
    for (size_t i = 0; i < a.size(); ++i) a[i] += x[i];
    const Vec y = LayerNorm(a, s, d, W(kLn1G, 1, 0.1f, d), W(kLn1B, 0, 0.02f, d));
    const Vec b1 = W(kB1, 0, 0.02f, kFfn), b2 = W(kB2, 0, 0.02f, d);
    Vec u = MatMul(y, s, d, W(kW1, 0, 0.153f, d * kFfn), kFfn, &b1);
    for (double& e : u) e = Gelu(e);
    Vec f = MatMul(u, s, kFfn, W(kW2, 0, 0.0765f, kFfn * d), d, &b2);
    for (size_t i = 0; i < f.size(); ++i) f[i] += y[i];
    x = LayerNorm(f, s, d, W(kLn2G, 1, 0.1f, d), W(kLn2B, 0, 0.02f, d));
  }
  return Vec(x.begin(), x.begin() + static_cast<long>(d));
}

std::vector<int32_t> LlmGenerate(uint64_t seed, const std::vector<int32_t>& prompt, int max_tokens,
                                 std::vector<double>* margin) {
  using namespace sample_llm;
  const size_t d = kDim, q3 = 3 * kDim;
  std::vector<int32_t> ids = prompt;
  std::vector<Vec> cache_q(kLayers), cache_k(kLayers), cache_v(kLayers);
  const Vec head = Weights(seed, kHead, 0, 0.153f, d * kVocab);
  std::vector<int32_t> out;
  for (size_t p = 0; p + 1 < prompt.size() + static_cast<size_t>(max_tokens); ++p) {
    Vec x = Weights(seed, kTok, 0, 1.0f, static_cast<uint64_t>(ids[p]) * d, d);
    const Vec pos = Weights(seed, kPos, 0, 0.3f, p * d, d);
    for (size_t j = 0; j < d; ++j) x[j] += pos[j];
    for (unsigned l = 0; l < kLayers; ++l) {
      auto W = [&](uint32_t t, float off, float scale, uint64_t first, uint64_t n) {
        return Weights(seed, LayerTensorId(l, t), off, scale, first, n);
      };
      const Vec h = LayerNorm(x, 1, d, W(kLn1G, 1, 0.1f, 0, d), W(kLn1B, 0, 0.02f, 0, d));
      const Vec qkv = MatMul(h, 1, d, W(kWqkv, 0, 0.153f, 0, d * q3), q3);
      cache_q[l].assign(qkv.begin(), qkv.begin() + static_cast<long>(d));
      cache_k[l].insert(cache_k[l].end(), qkv.begin() + static_cast<long>(d), qkv.begin() + static_cast<long>(2 * d));
      cache_v[l].insert(cache_v[l].end(), qkv.begin() + static_cast<long>(2 * d), qkv.end());
      const Vec ctx = Attention(cache_q[l], cache_k[l], cache_v[l], 1, p + 1, kHeads, kHeadDim);
      const Vec o = MatMul(ctx, 1, d, W(kWo, 0, 0.1f, 0, d * d), d);
      for (size_t j = 0; j < d; ++j) x[j] += o[j];
      const Vec h2 = LayerNorm(x, 1, d, W(kLn2G, 1, 0.1f, 0, d), W(kLn2B, 0, 0.02f, 0, d));
      const uint64_t e = ExpertFor(seed, l, static_cast<unsigned>(p));
      const Vec b1 = W(kB1, 0, 0.02f, e * kFfn, kFfn);
      Vec u = MatMul(h2, 1, d, W(kW1, 0, 0.153f, e * d * kFfn, d * kFfn), kFfn, &b1);
      for (double& v : u) v = Gelu(v);
      const Vec f = MatMul(u, 1, kFfn, W(kW2, 0, 0.05f, e * kFfn * d, kFfn * d), d);
      for (size_t j = 0; j < d; ++j) x[j] += f[j];
    }
    if (p + 1 < prompt.size()) continue;
    const Vec h = LayerNorm(x, 1, d, Weights(seed, kLnFG, 1, 0.1f, d), Weights(seed, kLnFB, 0, 0.02f, d));
    const Vec logits = MatMul(h, 1, d, head, kVocab);
    const auto best = std::max_element(logits.begin(), logits.end());
    double second = -1e300;
    for (auto it = logits.begin(); it != logits.end(); ++it) {
      if (it != best) second = std::max(second, *it);
    }
    margin->push_back(*best - second);
    ids.push_back(static_cast<int32_t>(best - logits.begin()));
    out.push_back(ids.back());
  }
  return out;
}

}  // namespace sample_test
