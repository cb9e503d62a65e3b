// Internal: drawing an index with probability proportional to a weight (Zipf popularity over
// functions, catalog shares over models), and a seeded shuffle.
//
// Thread-safety: a sampler is immutable after construction; Sample() may run concurrently
// with distinct Rngs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rng.h"

namespace gshare::workload::internal {

class DiscreteSampler {
 public:
  // REQUIRES: weights non-empty, each >= 0, sum > 0.
  explicit DiscreteSampler(const std::vector<double>& weights) {
    cdf_.reserve(weights.size());
    double total = 0;
    for (double w : weights) cdf_.push_back(total += w);
    for (double& c : cdf_) c /= total;
    if (!cdf_.empty()) cdf_[cdf_.size() - 1] = 1.0;
  }

  uint32_t Sample(Rng* rng) const {
    const double u = rng->Uniform();
    const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
    return static_cast<uint32_t>(std::min<size_t>(it - cdf_.begin(), cdf_.size() - 1));
  }

 private:
  std::vector<double> cdf_;
};

// Zipf weights 1/k^s for ranks k = 1..n.
inline std::vector<double> ZipfWeights(uint32_t n, double s) {
  std::vector<double> w(n);
  for (uint32_t k = 0; k < n; ++k) w[k] = std::pow(static_cast<double>(k + 1), -s);
  return w;
}

// Fisher-Yates shuffle driven by `rng`.
template <typename T>
void Shuffle(std::vector<T>* items, Rng* rng) {
  for (size_t i = items->size(); i > 1; --i) {
    std::swap((*items)[i - 1], (*items)[rng->Below(i)]);
  }
}

}  // namespace gshare::workload::internal
