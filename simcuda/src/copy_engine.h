// Copies and memsets as stream operations: classification of pointers (host or device), range
// validation, and the simulated-time model (host<->device copies take bytes / link bandwidth on
// the device's link timeline for that direction; device-to-device copies and memsets take
// bytes / memory bandwidth on the compute timeline). Thread-safe.
#ifndef SIMCUDA_SRC_COPY_ENGINE_H_
#define SIMCUDA_SRC_COPY_ENGINE_H_

#include <cstddef>
#include <cstdint>

#include "api.h"
#include "stream.h"

namespace simcuda {

// -1 if `ptr` is not device memory (host, registered or unknown), else its device ordinal.
int DeviceOf(uintptr_t ptr);
// True if [ptr, ptr + bytes) lies in device memory the device can access (possibly across
// several adjacent allocations or VMM mappings).
bool IsDeviceRange(uintptr_t ptr, size_t bytes);

// One strided copy: `height * depth` rows of `width` bytes.
struct CopyShape {
  uintptr_t dst = 0;
  uintptr_t src = 0;
  size_t width = 0;
  size_t height = 1;
  size_t depth = 1;
  size_t dst_pitch = 0;
  size_t src_pitch = 0;
  size_t dst_height = 0;  // rows per slice (3D)
  size_t src_height = 0;
  size_t bytes() const { return width * height * depth; }
};

// Validates a copy whose sides are device (true) or host (false) memory and returns the op
// performing it. `dst_device`/`src_device` of -1 mean "classify the pointer" (unified memory).
CUresult MakeCopyOp(const CopyShape& shape, int dst_kind, int src_kind, OpFn* op);
inline constexpr int kHostSide = 0;
inline constexpr int kDeviceSide = 1;
inline constexpr int kUnifiedSide = 2;

// A memset of `height` rows of `width` elements of `elem_size` bytes (1, 2 or 4) at `pitch`.
CUresult MakeMemsetOp(uintptr_t dst, size_t pitch, uint32_t value, size_t elem_size, size_t width,
                      size_t height, OpFn* op);

// True unless [ptr, ptr + bytes) overlaps a VMM mapping that does not grant `device` read
// access (a context of `device` cannot reach it: copies fail, kernels fault, as on a GPU).
// Host memory, plain device memory (copies between devices are staged by the driver) and
// unknown addresses pass: their validity is checked elsewhere.
bool VmmReachableFrom(int device, uintptr_t ptr, size_t bytes);
// True if a kernel running on `device` may dereference `ptr`: not inside another device's plain
// device memory (no peer access is modelled) nor inside a VMM mapping without access for it.
bool KernelMayAccess(int device, uintptr_t ptr);

// Resolves `stream` (see ResolveStream), then submits `op`; waits for it if `sync`. With
// `reach`, the copy's (or memset's: src == 0) device sides must be reachable from the stream's
// context's device (VmmReachableFrom), else CUDA_ERROR_INVALID_VALUE and nothing is submitted.
CUresult RunOp(CUstream stream, bool per_thread_entry, bool sync, OpFn op,
               const CopyShape* reach = nullptr);

// Converts CUDA_MEMCPY2D / CUDA_MEMCPY3D (device-pointer and host-pointer forms only).
CUresult ShapeFrom2D(const CUDA_MEMCPY2D* p, CopyShape* shape, int* dst_kind, int* src_kind);
CUresult ShapeFrom3D(const CUDA_MEMCPY3D* p, CopyShape* shape, int* dst_kind, int* src_kind);
CUresult ShapeFrom3DPeer(const CUDA_MEMCPY3D_PEER* p, CopyShape* shape, int* dst_kind, int* src_kind);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_COPY_ENGINE_H_
