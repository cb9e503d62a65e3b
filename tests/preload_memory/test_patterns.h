// Deterministic byte patterns and checksums for the swap tests: every allocation is filled with
// bytes derived from (seed, offset) so a single misplaced or lost byte changes its checksum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gshare::memory::testing {

inline uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline void FillPattern(void* dst, size_t bytes, uint64_t seed) {
  auto* p = static_cast<uint8_t*>(dst);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    const uint64_t v = Mix(seed ^ (i * 0x100000001b3ull));
    std::memcpy(p + i, &v, 8);
  }
  const uint64_t tail = Mix(seed ^ (i * 0x100000001b3ull));
  std::memcpy(p + i, &tail, bytes - i);
}

// FNV-1a over 8-byte words (tail bytewise) mixed with the length.
inline uint64_t Checksum(const void* src, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(src);
  uint64_t h = 0xcbf29ce484222325ull ^ bytes;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t v;
    std::memcpy(&v, p + i, 8);
    h = (h ^ v) * 0x100000001b3ull;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace gshare::memory::testing
