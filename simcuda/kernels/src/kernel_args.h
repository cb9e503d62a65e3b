// Helpers for writing CPU twins: reading launch parameters and describing parameter lists.
// Internal to the simcuda_kernels plugin (and its tests).
#ifndef SIMCUDA_KERNELS_SRC_KERNEL_ARGS_H_
#define SIMCUDA_KERNELS_SRC_KERNEL_ARGS_H_

#include <cstddef>
#include <cstring>

#include "simcuda/kernel_plugin.h"

namespace simcuda::kernels {

// The value of parameter i as type T. REQUIRES: params[i] points to at least sizeof(T) bytes
// (guaranteed by simcuda, which copies param_sizes[i] bytes per parameter).
template <typename T>
T Arg(void* const* params, unsigned i) {
  T value;
  std::memcpy(&value, params[i], sizeof(T));
  return value;
}

// A static array of the sizes of a parameter list, for SimcudaKernelDesc::param_sizes.
template <typename... Ts>
inline constexpr size_t kParamSizes[] = {sizeof(Ts)...};

// A descriptor for kernel `name` taking parameters of types Ts...
template <typename... Ts>
constexpr SimcudaKernelDesc Describe(const char* name, SimcudaKernelRunFn run,
                                     SimcudaKernelCostFn cost) {
  return SimcudaKernelDesc{name, run, cost, sizeof...(Ts), kParamSizes<Ts...>};
}

// Cost of moving `bytes` and doing `flops`, with no fixed latency.
constexpr SimcudaKernelCost Work(double flops, double bytes) {
  return SimcudaKernelCost{flops, bytes, 0.0};
}

}  // namespace simcuda::kernels

#endif  // SIMCUDA_KERNELS_SRC_KERNEL_ARGS_H_
