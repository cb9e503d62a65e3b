// Owning handles for the driver objects a sample creates: device memory, page-locked host
// memory, streams, events, modules and a created context (the sample servers and simcuda-demo,
// samples/kernel_demo, share them). Move-only; the context they were created in must be current (or
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

// Device memory whose size the caller keeps (cuMemAlloc(m.out(), bytes)).
using DeviceMemory = Owned<CUdeviceptr, FreeDevice>;
using Stream = Owned<CUstream, DestroyStream>;
using Event = Owned<CUevent, DestroyEvent>;
using Module = Owned<CUmodule, UnloadModule>;

// Memory of a known size: a handle plus the bytes it was allocated with.
template <typename Ptr, CUresult (*Allocator)(Ptr*, size_t), CUresult (*Release)(Ptr)>
class SizedMemory {
 public:
  // Allocates `bytes` (> 0), releasing what it held.
  CUresult Allocate(size_t bytes) {
    bytes_ = 0;
    CUresult r = Allocator(mem_.out(), bytes);
    if (r == CUDA_SUCCESS) bytes_ = bytes;
    return r;
  }
  Ptr get() const { return mem_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  Owned<Ptr, Release> mem_;
  size_t bytes_ = 0;
};

inline CUresult AllocDevice(CUdeviceptr* p, size_t bytes) { return cuMemAlloc(p, bytes); }
inline CUresult AllocHost(void** p, size_t bytes) { return cuMemAllocHost(p, bytes); }

// Device memory (cuMemAlloc).
class DeviceBuffer : public SizedMemory<CUdeviceptr, AllocDevice, FreeDevice> {
 public:
  // Address of float element i (for kernels that take offsets into a buffer).
  CUdeviceptr f32(size_t i) const { return get() + i * sizeof(float); }
};

// Page-locked host memory (cuMemAllocHost), the source and target of async copies.
class PinnedBuffer : public SizedMemory<void*, AllocHost, FreeHost> {
 public:
  template <typename T>
  T* as() const { return static_cast<T*>(get()); }
};

// A context created on a device (cuCtxCreate) and current on this thread for the lifetime of the
// object; destroyed (which also pops it) at the end.
class CreatedContext {
 public:
  explicit CreatedContext(CUdevice dev) : dev_(dev) {}
  CreatedContext(const CreatedContext&) = delete;
  CreatedContext& operator=(const CreatedContext&) = delete;
  ~CreatedContext() {
    if (ctx_ != nullptr) (void)cuCtxDestroy(ctx_);
  }
  // Creates the context (which makes it current); call once.
  CUresult Open() {
    const CUresult r = cuCtxCreate(&ctx_, nullptr, 0, dev_);
    if (r != CUDA_SUCCESS) ctx_ = nullptr;
    return r;
  }

 private:
  CUdevice dev_;
  CUcontext ctx_ = nullptr;
};

}  // namespace sample
