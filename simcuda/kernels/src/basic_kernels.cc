// CPU twins of basic_kernels.cu: vector_add, saxpy, fill_u32, checksum, sleep_ns.
// Same float32 math as the GPU versions; integer results (fill_u32, checksum) are bit-identical.
#include <cstdint>

#include "kernel_args.h"
#include "kernel_tables.h"
#include "simcuda/kernels/kernel_math.h"

namespace simcuda::kernels {
namespace {

using u64 = unsigned long long;

void VectorAdd(const SimcudaLaunchDims*, void* const* p) {
  const float* a = Arg<const float*>(p, 0);
  const float* b = Arg<const float*>(p, 1);
  float* c = Arg<float*>(p, 2);
  const u64 n = Arg<u64>(p, 3);
  for (u64 i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
SimcudaKernelCost VectorAddCost(const SimcudaLaunchDims*, void* const* p) {
  const double n = static_cast<double>(Arg<u64>(p, 3));
  return Work(n, 12.0 * n);
}

void Saxpy(const SimcudaLaunchDims*, void* const* p) {
  const float alpha = Arg<float>(p, 0);
  const float* x = Arg<const float*>(p, 1);
  float* y = Arg<float*>(p, 2);
  const u64 n = Arg<u64>(p, 3);
  for (u64 i = 0; i < n; ++i) y[i] = alpha * x[i] + y[i];
}
SimcudaKernelCost SaxpyCost(const SimcudaLaunchDims*, void* const* p) {
  const double n = static_cast<double>(Arg<u64>(p, 3));
  return Work(2.0 * n, 12.0 * n);
}

void FillU32(const SimcudaLaunchDims*, void* const* p) {
  unsigned* out = Arg<unsigned*>(p, 0);
  const u64 n = Arg<u64>(p, 1);
  const unsigned seed = Arg<unsigned>(p, 2);
  for (u64 i = 0; i < n; ++i) out[i] = FillPattern(seed, i);
}
SimcudaKernelCost FillU32Cost(const SimcudaLaunchDims*, void* const* p) {
  return Work(0.0, 4.0 * static_cast<double>(Arg<u64>(p, 1)));
}

void Checksum(const SimcudaLaunchDims*, void* const* p) {
  const unsigned char* data = Arg<const unsigned char*>(p, 0);
  const u64 nbytes = Arg<u64>(p, 1);
  u64* out = Arg<u64*>(p, 2);
  *out += HostChecksum(data, nbytes);
}
SimcudaKernelCost ChecksumCost(const SimcudaLaunchDims*, void* const* p) {
  return Work(0.0, static_cast<double>(Arg<u64>(p, 1)) + 8.0);
}

void SleepNs(const SimcudaLaunchDims*, void* const*) {}  // the time is in the cost
SimcudaKernelCost SleepNsCost(const SimcudaLaunchDims*, void* const* p) {
  return SimcudaKernelCost{0.0, 0.0, static_cast<double>(Arg<u64>(p, 0))};
}

constexpr SimcudaKernelDesc kTable[] = {
    Describe<const float*, const float*, float*, u64>("vector_add", VectorAdd, VectorAddCost),
    Describe<float, const float*, float*, u64>("saxpy", Saxpy, SaxpyCost),
    Describe<unsigned*, u64, unsigned>("fill_u32", FillU32, FillU32Cost),
    Describe<const unsigned char*, u64, u64*>("checksum", Checksum, ChecksumCost),
    Describe<u64>("sleep_ns", SleepNs, SleepNsCost),
};

}  // namespace

std::span<const SimcudaKernelDesc> BasicKernels() { return kTable; }

}  // namespace simcuda::kernels
