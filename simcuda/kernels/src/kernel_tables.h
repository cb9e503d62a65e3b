// The descriptor tables of the simcuda kernel set, one per source file; plugin.cc joins them.
// Each table has static storage duration. Thread-safe (immutable).
#ifndef SIMCUDA_KERNELS_SRC_KERNEL_TABLES_H_
#define SIMCUDA_KERNELS_SRC_KERNEL_TABLES_H_

#include <span>

#include "simcuda/kernel_plugin.h"

namespace simcuda::kernels {

std::span<const SimcudaKernelDesc> BasicKernels();  // basic_kernels.cc
std::span<const SimcudaKernelDesc> GemmKernels();   // gemm.cc
std::span<const SimcudaKernelDesc> NnKernels();     // nn_kernels.cc
std::span<const SimcudaKernelDesc> CnnKernels();    // cnn_kernels.cc

}  // namespace simcuda::kernels

#endif  // SIMCUDA_KERNELS_SRC_KERNEL_TABLES_H_
