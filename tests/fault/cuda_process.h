// BecomeCudaProcess: makes a test's raw client a CUDA process (the driver found as libcuda.so.1,
// simcuda in the tests, initialised, device 0's primary context retained and current, `mib` MiB
// allocated there unless 0), so the arbiter's driver knows it as one. Shared by fault_raw_client
// and hostile_client. The driver is dlopen'ed so these programs need no CUDA library otherwise.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>

namespace gshare::fault {

inline bool BecomeCudaProcess(uint64_t mib) {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  using Init = int (*)(unsigned);
  using DeviceGet = int (*)(int*, int);
  using Retain = int (*)(void**, int);
  using SetCurrent = int (*)(void*);
  using Alloc = int (*)(unsigned long long*, size_t);
  auto init = reinterpret_cast<Init>(::dlsym(lib, "cuInit"));
  auto device_get = reinterpret_cast<DeviceGet>(::dlsym(lib, "cuDeviceGet"));
  auto retain = reinterpret_cast<Retain>(::dlsym(lib, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<SetCurrent>(::dlsym(lib, "cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<Alloc>(::dlsym(lib, "cuMemAlloc_v2"));
  if (init == nullptr || device_get == nullptr || retain == nullptr || set_current == nullptr ||
      alloc == nullptr)
    return false;
  int dev = 0;
  void* ctx = nullptr;
  unsigned long long ptr = 0;
  return init(0) == 0 && device_get(&dev, 0) == 0 && retain(&ctx, dev) == 0 &&
         set_current(ctx) == 0 && (mib == 0 || alloc(&ptr, static_cast<size_t>(mib) << 20) == 0);
}

}  // namespace gshare::fault
