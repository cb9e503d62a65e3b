// Basic GPU kernels of the simcuda kernel set: vector_add, saxpy, fill_u32, checksum, sleep_ns.
// Their CPU twins are in basic_kernels.cc; signatures and launch geometry are documented in
// include/simcuda/kernels/kernels.h. Element-wise kernels use grid-stride loops, so any grid
// covers the whole range (as the CPU twins do).
#include "../include/simcuda/kernels/kernel_math.h"

using simcuda::kernels::ChecksumChunk;
using simcuda::kernels::ChecksumTerm;
using simcuda::kernels::FillPattern;

#define GRID_STRIDE_LOOP(i, n)                                                        \
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
       i < (n); i += (unsigned long long)gridDim.x * blockDim.x)

// c[i] = a[i] + b[i]
extern "C" __global__ void vector_add(const float* a, const float* b, float* c,
                                      unsigned long long n) {
  GRID_STRIDE_LOOP(i, n) { c[i] = a[i] + b[i]; }
}

// y[i] = alpha * x[i] + y[i]
extern "C" __global__ void saxpy(float alpha, const float* x, float* y, unsigned long long n) {
  GRID_STRIDE_LOOP(i, n) { y[i] = alpha * x[i] + y[i]; }
}

// p[i] = FillPattern(seed, i)
extern "C" __global__ void fill_u32(unsigned int* p, unsigned long long n, unsigned int seed) {
  GRID_STRIDE_LOOP(i, n) { p[i] = FillPattern(seed, i); }
}

// *out += checksum of the nbytes at p (see kernel_math.h). Block size must be a power of two
// <= 1024; *out must be zeroed before the launch for the result to equal HostChecksum.
extern "C" __global__ void checksum(const unsigned char* p, unsigned long long nbytes,
                                    unsigned long long* out) {
  __shared__ unsigned long long partial[1024];
  unsigned long long chunks = (nbytes + 7) / 8;
  unsigned long long sum = 0;
  GRID_STRIDE_LOOP(j, chunks) { sum += ChecksumTerm(j, ChecksumChunk(p, nbytes, j)); }
  if (blockIdx.x == 0 && threadIdx.x == 0) sum += nbytes;
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

// Busy for `ns` nanoseconds of GPU time (one thread is enough; every thread waits).
extern "C" __global__ void sleep_ns(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
