// Includes cuda.h the way the driver itself sees it: every versioned and per-thread-stream
// variant declared under its real symbol name (cuMemAlloc_v2, cuMemcpyHtoD_v2_ptds, ...), with
// default visibility so that simcuda's definitions are exported (everything else is hidden).
// Every file that defines a cu* entry point includes this instead of <cuda.h>.
#ifndef SIMCUDA_SRC_API_H_
#define SIMCUDA_SRC_API_H_

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#ifndef __CUDA_API_PUSH_VISIBILITY_DEFAULT
#define __CUDA_API_PUSH_VISIBILITY_DEFAULT 1
#endif
#include <cuda.h>

#endif  // SIMCUDA_SRC_API_H_
