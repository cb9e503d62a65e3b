// Owning wrappers for the driver objects simcuda-demo creates (device memory, streams, events,
// modules, the context), so every exit path releases them. Header-only. Each wrapper is
// move-only; the context they were created in must be current when they are destroyed.
// Release errors are ignored (the demo reports the first error of the work itself).
#ifndef SIMCUDA_DEMO_CUDA_RESOURCES_H_
#define SIMCUDA_DEMO_CUDA_RESOURCES_H_

#include <cuda.h>

#include <utility>

namespace simcuda_demo {

// A handle plus the function that releases it.
template <typename Handle, CUresult (*Release)(Handle)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle h) : handle_(h) {}
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
  // For creation calls: releases any current handle and returns where to store a new one.
  Handle* out() {
    Reset();
    return &handle_;
  }

 private:
  void Reset() {
    if (handle_ != Handle{}) (void)Release(std::exchange(handle_, Handle{}));
  }
  Handle handle_{};
};

inline CUresult ReleaseDeviceMemory(CUdeviceptr p) { return cuMemFree(p); }
inline CUresult ReleaseStream(CUstream s) { return cuStreamDestroy(s); }
inline CUresult ReleaseEvent(CUevent e) { return cuEventDestroy(e); }
inline CUresult ReleaseModule(CUmodule m) { return cuModuleUnload(m); }

using DeviceMemory = Owned<CUdeviceptr, ReleaseDeviceMemory>;
using Stream = Owned<CUstream, ReleaseStream>;
using Event = Owned<CUevent, ReleaseEvent>;
using Module = Owned<CUmodule, ReleaseModule>;

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
    CUresult r = cuCtxCreate(&ctx_, nullptr, 0, dev_);
    if (r != CUDA_SUCCESS) ctx_ = nullptr;
    return r;
  }

 private:
  CUdevice dev_;
  CUcontext ctx_ = nullptr;
};

}  // namespace simcuda_demo

#endif  // SIMCUDA_DEMO_CUDA_RESOURCES_H_
