// Owning handles for the driver objects a sample creates: device memory, page-locked host
// memory, streams and events. Move-only; the context they were created in must be current (or
// at least alive) when they are destroyed. Release errors are ignored. Header-only.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <utility>

namespace sample {

template <typename Handle, CUresult (*Release)(Handle)>
class Owned {
 public:
  Owned() = default;
  Owned(Owned&& o) noexcept : handle_(std::exchange(o.handle_, Handle{})) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      Reset();
      handle_ = std::exchange(o.handle_, Handle{});
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { Reset(); }

  Handle get() const { return handle_; }
  // For creation calls: releases the current handle and returns where to store a new one.
  Handle* out() {
    Reset();
    return &handle_;
  }
  void Reset() {
    if (handle_ != Handle{}) (void)Release(std::exchange(handle_, Handle{}));
  }

 private:
  Handle handle_{};
};

inline CUresult FreeDevice(CUdeviceptr p) { return cuMemFree(p); }
inline CUresult FreeHost(void* p) { return cuMemFreeHost(p); }
inline CUresult DestroyStream(CUstream s) { return cuStreamDestroy(s); }
inline CUresult DestroyEvent(CUevent e) { return cuEventDestroy(e); }
inline CUresult UnloadModule(CUmodule m) { return cuModuleUnload(m); }

using Stream = Owned<CUstream, DestroyStream>;
using Event = Owned<CUevent, DestroyEvent>;
using Module = Owned<CUmodule, UnloadModule>;

// Device memory of a known size.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `bytes` (> 0) with cuMemAlloc.
  CUresult Allocate(size_t bytes) {
    bytes_ = 0;
    CUresult r = cuMemAlloc(mem_.out(), bytes);
    if (r == CUDA_SUCCESS) bytes_ = bytes;
    return r;
  }
  CUdeviceptr get() const { return mem_.get(); }
  size_t bytes() const { return bytes_; }
  // Address of float element i (for kernels that take offsets into a buffer).
  CUdeviceptr f32(size_t i) const { return mem_.get() + i * sizeof(float); }

 private:
  Owned<CUdeviceptr, FreeDevice> mem_;
  size_t bytes_ = 0;
};

// Page-locked host memory (cuMemAllocHost), the source and target of async copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  CUresult Allocate(size_t bytes) {
    bytes_ = 0;
    CUresult r = cuMemAllocHost(mem_.out(), bytes);
    if (r == CUDA_SUCCESS) bytes_ = bytes;
    return r;
  }
  void* get() const { return mem_.get(); }
  template <typename T>
  T* as() const { return static_cast<T*>(mem_.get()); }
  size_t bytes() const { return bytes_; }

 private:
  Owned<void*, FreeHost> mem_;
  size_t bytes_ = 0;
};

}  // namespace sample
