// Host reference computations for simcuda-demo's verification.
#include "host_reference.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

namespace simcuda_demo {

void HostSgemm(unsigned n, float alpha, const std::vector<float>& a, const std::vector<float>& b,
               float beta, std::vector<float>* c) {
  std::vector<float> acc(n);
  for (unsigned i = 0; i < n; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (unsigned k = 0; k < n; ++k) {
      const float aik = a[size_t{i} * n + k];
      const float* brow = &b[size_t{k} * n];
      for (unsigned j = 0; j < n; ++j) acc[j] += aik * brow[j];
    }
    float* crow = &(*c)[size_t{i} * n];
    for (unsigned j = 0; j < n; ++j) crow[j] = alpha * acc[j] + beta * crow[j];
  }
}

std::string CompareFloats(const std::vector<float>& got, const std::vector<float>& want,
                          float tol) {
  if (got.size() != want.size()) {
    return fmt::format("size {} != {}", got.size(), want.size());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * (1.0f + std::fabs(want[i])))) {
      return fmt::format("element {}: got {}, want {}", i, got[i], want[i]);
    }
  }
  return {};
}

std::vector<float> RandomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace simcuda_demo
