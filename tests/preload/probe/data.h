// preload_probe's data checks: deterministic fill bytes, a host checksum, and the same checksum
// computed on the device by the sample "checksum" kernel (simcuda/kernels), so that a mode can
// tell whether device memory kept its bytes across swaps and moves.
//
// Thread-safety: stateless; KernelChecksum uses the calling thread's current context.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gshare::probe {

// One device allocation with the checksum of the bytes uploaded into it.
struct Block {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  uint64_t sum = 0;
  uint32_t seed = 0;
};

// FNV-1a over 8-byte words (then the tail bytes): position-sensitive, fast on large blocks.
uint64_t Checksum(const std::vector<uint8_t>& data);

// Deterministic bytes from `seed`, fast enough for hundreds of MiB.
void FillBytes(std::vector<uint8_t>* data, uint64_t seed);

// Runs the "checksum" kernel of `module` (basic_kernels) over `b` into the 8-byte device word
// `out`; false if any driver call failed, else *sum holds the kernel's result.
bool KernelChecksum(CUmodule module, const Block& b, CUdeviceptr out, uint64_t* sum);

}  // namespace gshare::probe
