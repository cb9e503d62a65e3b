// Integer formulas shared by the GPU kernels (.cu), their CPU twins and host programs, so that
// fill_u32 patterns and checksums are bit-identical everywhere. Header-only; compiles as C++ and
// as CUDA (the functions are __host__ __device__ under nvcc). Thread-safe (pure functions).
#ifndef SIMCUDA_KERNELS_KERNEL_MATH_H_
#define SIMCUDA_KERNELS_KERNEL_MATH_H_

#ifdef __CUDACC__
#define SIMCUDA_HD __host__ __device__ __forceinline__
#else
#include <cstddef>
#include <cstdint>
#include <cstring>
#define SIMCUDA_HD inline
#endif

namespace simcuda::kernels {

// splitmix64's finaliser: a bijective 64-bit mixer.
SIMCUDA_HD unsigned long long Mix64(unsigned long long z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z;
}

// fill_u32 writes FillPattern(seed, i) to element i.
SIMCUDA_HD unsigned int FillPattern(unsigned int seed, unsigned long long i) {
  return static_cast<unsigned int>(Mix64((static_cast<unsigned long long>(seed) << 32) ^ i) >> 16);
}

// checksum(p, n) = n + sum over 8-byte chunks j of ChecksumTerm(j, w_j)  (mod 2^64), where w_j is
// chunk j read little-endian, the last chunk zero-padded. A sum is order-independent, so a
// parallel reduction gives exactly the sequential result; the chunk index makes moved data count.
SIMCUDA_HD unsigned long long ChecksumTerm(unsigned long long j, unsigned long long word) {
  return Mix64(word ^ (j * 0x9e3779b97f4a7c15ULL));
}

// Reads chunk j (of nbytes bytes at p) as a little-endian word, zero-padding past the end.
SIMCUDA_HD unsigned long long ChecksumChunk(const unsigned char* p, unsigned long long nbytes,
                                            unsigned long long j) {
  unsigned long long word = 0;
  unsigned long long base = j * 8;
  for (unsigned k = 0; k < 8 && base + k < nbytes; ++k) {
    word |= static_cast<unsigned long long>(p[base + k]) << (8 * k);
  }
  return word;
}

#ifndef __CUDACC__
// The checksum of a host buffer, equal to what the checksum kernel adds to its (zeroed) output.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "HostChecksum reads words little-endian");
inline uint64_t HostChecksum(const void* data, size_t nbytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t sum = nbytes;
  uint64_t full = nbytes / 8;
  for (uint64_t j = 0; j < full; ++j) {
    uint64_t word;
    std::memcpy(&word, p + j * 8, 8);  // little-endian host (x86-64, aarch64)
    sum += ChecksumTerm(j, word);
  }
  if (nbytes % 8 != 0) sum += ChecksumTerm(full, ChecksumChunk(p, nbytes, full));
  return sum;
}
#endif

}  // namespace simcuda::kernels

#endif  // SIMCUDA_KERNELS_KERNEL_MATH_H_
