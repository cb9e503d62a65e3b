// The common prologue of memory hooks: the runtime's status and its VgpuMemory.
#pragma once

#include <cuda.h>

#include "runtime/runtime.h"

namespace gshare::preload {

// Stores the process's VgpuMemory in *mem and returns CUDA_SUCCESS; otherwise the error the hook
// returns (configuration error, or CUDA_ERROR_NOT_INITIALIZED before a successful cuInit).
inline CUresult AccessMemory(Runtime** rt, memory::VgpuMemory** mem) {
  Runtime& r = Runtime::Get();
  *rt = &r;
  if (r.status() != CUDA_SUCCESS) return r.status();
  *mem = r.memory();
  return *mem != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

}  // namespace gshare::preload
