// Deterministic weights of the sample models: every element of every weight tensor is a pure
// function of (model seed, tensor id, element index), so servers generate them at start-up
// with no download and tests recompute any element on the host without materialising the
// whole model. Header-only; all functions are pure and thread-safe.
//
// Formula (documented in docs/samples.md):
//   Mix64(z)          = splitmix64 finaliser
//   base(seed, t)     = Mix64(seed * 0x9E3779B97F4A7C15 + t + 1)
//   u(seed, t, i)     = (Mix64(base + i * 0xD1B54A32D192ED03) >> 40) / 2^23 - 1   in [-1, 1)
//   weight            = offset + scale * u                                  (float32 math)
#pragma once

#include <cstdint>

namespace sample {

constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One weight tensor: `count` float32 elements drawn as offset + scale * U[-1, 1).
struct WeightSpec {
  uint32_t id = 0;       // unique within a model
  uint64_t count = 0;    // elements
  float offset = 0.0f;
  float scale = 0.0f;
};

inline uint64_t WeightBase(uint64_t seed, uint32_t id) {
  return Mix64(seed * 0x9E3779B97F4A7C15ull + id + 1);
}

// Element i of the tensor whose WeightBase is `base`.
inline float WeightAt(uint64_t base, uint64_t i, float offset, float scale) {
  const uint64_t z = Mix64(base + i * 0xD1B54A32D192ED03ull);
  const float u = static_cast<float>(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
  return offset + scale * u;
}

inline float WeightAt(uint64_t seed, const WeightSpec& w, uint64_t i) {
  return WeightAt(WeightBase(seed, w.id), i, w.offset, w.scale);
}

}  // namespace sample
