// preload_probe's data checks (data.h): host checksum, fill bytes, the device checksum kernel.
#include "data.h"

#include <algorithm>
#include <cstring>

#include "simcuda/kernels/kernels.h"

namespace gshare::probe {

uint64_t Checksum(const std::vector<uint8_t>& data) {
  uint64_t h = 1469598103934665603ull;
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, data.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < data.size(); ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

void FillBytes(std::vector<uint8_t>* data, uint64_t seed) {
  uint64_t x = seed;
  for (size_t i = 0; i < data->size(); i += 8) {
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(data->data() + i, &z, std::min<size_t>(8, data->size() - i));
  }
}

bool KernelChecksum(CUmodule module, const Block& b, CUdeviceptr out, uint64_t* sum) {
  CUfunction checksum = nullptr;
  if (cuModuleGetFunction(&checksum, module, "checksum") != CUDA_SUCCESS) return false;
  unsigned long long zero = 0;
  if (cuMemcpyHtoD(out, &zero, sizeof(zero)) != CUDA_SUCCESS) return false;
  CUdeviceptr p = b.ptr;
  unsigned long long n = b.size;
  void* params[] = {&p, &n, &out};
  const unsigned grid = simcuda::kernels::ElementwiseGrid(n);
  if (cuLaunchKernel(checksum, grid, 1, 1, simcuda::kernels::kElementwiseBlock, 1, 1, 0, nullptr,
                     params, nullptr) != CUDA_SUCCESS) {
    return false;
  }
  unsigned long long result = 0;
  if (cuMemcpyDtoH(&result, out, sizeof(result)) != CUDA_SUCCESS) return false;
  *sum = result;
  return true;
}

}  // namespace gshare::probe
