// The contract between simcuda (the simulated CUDA driver) and kernel plugins: shared libraries
// that provide CPU implementations ("twins") of GPU kernels, found by entry name.
//
// A plugin is named in SIMCUDA_KERNELS (a ':'-separated list of paths) and exports one C
// function, simcuda_kernels(), returning a static table of kernel descriptors. When a program
// loads a module image (PTX, cubin or fatbin) simcuda scans it for entry names; when the program
// asks for a function by name (cuModuleGetFunction, cuLibraryGetKernel) simcuda binds the name
// to the descriptor with the same name. cuLaunchKernel copies the parameter values (using
// param_sizes) at launch time and later runs `run` on the stream's worker thread; the simulated
// duration of the launch is
//     launch overhead + fixed_ns + max(flops / device FLOP/s, bytes / device memory bandwidth)
// from `cost` (fixed_ns lets a kernel such as sleep_ns declare an exact duration).
//
// Plain C so plugins can be built by any compiler; the ABI is versioned by SIMCUDA_PLUGIN_ABI.
#ifndef SIMCUDA_KERNEL_PLUGIN_H_
#define SIMCUDA_KERNEL_PLUGIN_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIMCUDA_PLUGIN_ABI 1
#define SIMCUDA_PLUGIN_ENTRY "simcuda_kernels"

// Launch geometry as given to cuLaunchKernel.
typedef struct SimcudaLaunchDims {
  unsigned int grid[3];
  unsigned int block[3];
  unsigned int shared_mem_bytes;
} SimcudaLaunchDims;

// Work done by one launch, for the cost model.
typedef struct SimcudaKernelCost {
  double flops;     // floating-point operations
  double bytes;     // bytes read + written in device memory
  double fixed_ns;  // simulated nanoseconds added whatever the device's speed (usually 0)
} SimcudaKernelCost;

// Runs the kernel on the CPU. params[i] points to a copy of parameter i (as in kernelParams).
// Device pointers in the parameters are real addresses the CPU can touch. `run` and `cost` may be
// called concurrently from several threads (one worker per stream, several processes): they must
// be reentrant (no unsynchronised global state).
typedef void (*SimcudaKernelRunFn)(const SimcudaLaunchDims* dims, void* const* params);
// Returns the work of one launch; must not touch device memory (called at submission).
typedef SimcudaKernelCost (*SimcudaKernelCostFn)(const SimcudaLaunchDims* dims,
                                                 void* const* params);

typedef struct SimcudaKernelDesc {
  const char* name;            // entry name as it appears in the module image (extern "C")
  SimcudaKernelRunFn run;
  SimcudaKernelCostFn cost;
  unsigned int num_params;
  const size_t* param_sizes;   // num_params entries, sizeof each parameter
} SimcudaKernelDesc;

// Exported by every plugin under the name SIMCUDA_PLUGIN_ENTRY. Stores the plugin's ABI version
// (SIMCUDA_PLUGIN_ABI) in *abi and the number of descriptors in *count; returns the table,
// which must stay valid for the life of the process.
typedef const SimcudaKernelDesc* (*SimcudaKernelsFn)(unsigned int* abi, size_t* count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // SIMCUDA_KERNEL_PLUGIN_H_
