// Internal: the library's random numbers. A xoshiro256** generator seeded through splitmix64,
// plus the few distributions the generators need, written out so that a seed gives the same
// sequence with every standard library (std:: distributions are implementation-defined).
//
// Thread-safety: an Rng is a plain value; use one per thread (or per function stream).
#pragma once

#include <cmath>
#include <cstdint>

namespace gshare::workload::internal {

class Rng {
 public:
  // `stream` selects an independent sequence for the same seed (e.g. one per function).
  explicit Rng(uint64_t seed, uint64_t stream = 0) {
    uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ULL + 0x2545F4914F6CDD1DULL);
    for (uint64_t& word : s_) word = SplitMix(&x);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe to take the logarithm of.
  double UniformPositive() { return 1.0 - Uniform(); }
  // Uniform integer in [0, n). REQUIRES: n > 0. (Multiply-shift; bias below 2^-64 * n.)
  uint64_t Below(uint64_t n) {
    __extension__ using U128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<U128>(Next()) * n) >> 64);
  }
  // Exponential with the given mean.
  double Exponential(double mean) { return -mean * std::log(UniformPositive()); }
  // Standard normal (Box-Muller; uses two uniforms per call, no caching, so the sequence does
  // not depend on call history beyond the generator state).
  double Normal() {
    const double r = std::sqrt(-2.0 * std::log(UniformPositive()));
    return r * std::cos(6.283185307179586 * Uniform());
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix(uint64_t* x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

}  // namespace gshare::workload::internal
