// DriverTable: the driver entry points the preload benchmarks call, looked up by dlsym in one
// library (the driver, the do-nothing fake driver, or libgshare.so's exported hooks), so that a
// benchmark can make the same call directly and through the shim. Each benchmark checks the
// entries it uses; the others may be nullptr (e.g. the fake driver has no allocator).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace gshare::bench {

struct DriverTable {
  PFN_cuLaunchKernel_v4000 launch = nullptr;
  PFN_cuMemcpyHtoDAsync_v3020 htod_async = nullptr;
  PFN_cuMemcpyDtoHAsync_v3020 dtoh_async = nullptr;
  PFN_cuMemcpyDtoDAsync_v3020 dtod_async = nullptr;
  PFN_cuMemsetD32Async_v3020 memset_async = nullptr;
  PFN_cuMemsetD8Async_v3020 memset8_async = nullptr;
  PFN_cuLaunchKernelEx_v11060 launch_ex = nullptr;
  PFN_cuGraphLaunch_v10000 graph_launch = nullptr;
  PFN_cuEventRecord_v2000 event_record = nullptr;
  PFN_cuStreamWaitEvent_v3020 wait_event = nullptr;
  PFN_cuMemAlloc_v3020 alloc = nullptr;
  PFN_cuMemFree_v3020 free = nullptr;
  PFN_cuPointerGetAttributes_v7000 pointer_attributes = nullptr;
  PFN_cuMemGetInfo_v3020 mem_get_info = nullptr;
};

// `name` in the library `handle`, as the function-pointer type of *out (nullptr if missing).
template <typename T>
void LoadSymbol(void* handle, const char* name, T* out) {
  *out = reinterpret_cast<T>(dlsym(handle, name));
}

// Every entry of the table from the library `handle` (a dlopen handle).
inline DriverTable LoadDriverTable(void* handle) {
  DriverTable t;
  LoadSymbol(handle, "cuLaunchKernel", &t.launch);
  LoadSymbol(handle, "cuMemcpyHtoDAsync_v2", &t.htod_async);
  LoadSymbol(handle, "cuMemcpyDtoHAsync_v2", &t.dtoh_async);
  LoadSymbol(handle, "cuMemcpyDtoDAsync_v2", &t.dtod_async);
  LoadSymbol(handle, "cuMemsetD32Async", &t.memset_async);
  LoadSymbol(handle, "cuMemsetD8Async", &t.memset8_async);
  LoadSymbol(handle, "cuLaunchKernelEx", &t.launch_ex);
  LoadSymbol(handle, "cuGraphLaunch", &t.graph_launch);
  LoadSymbol(handle, "cuEventRecord", &t.event_record);
  LoadSymbol(handle, "cuStreamWaitEvent", &t.wait_event);
  LoadSymbol(handle, "cuMemAlloc_v2", &t.alloc);
  LoadSymbol(handle, "cuMemFree_v2", &t.free);
  LoadSymbol(handle, "cuPointerGetAttributes", &t.pointer_attributes);
  LoadSymbol(handle, "cuMemGetInfo_v2", &t.mem_get_info);
  return t;
}

// The two tables a benchmark compares, and the libraries they came from.
struct DirectAndShim {
  DriverTable direct;             // the driver's own entry points
  DriverTable shim;               // libgshare.so's hooks, wrapping that same driver
  void* driver_handle = nullptr;  // for further lookups
  void* shim_handle = nullptr;
  bool ok = false;  // both loaded (a benchmark clears it when the rest of its set-up fails)
};

// dlopens (RTLD_LOCAL, never closed) the driver `driver_lib` and the shim `shim_lib`, which then
// wraps that same driver, and loads a table from each. Not ok, with the reason on stderr, if
// either library does not load. GSHARE_BENCH_SHIM_LIB=<another libgshare.so> replaces
// `shim_lib` (e.g. a copy saved before a change: both builds measured in one session).
inline DirectAndShim OpenDirectAndShim(const char* driver_lib, const char* shim_lib) {
  if (const char* other = std::getenv("GSHARE_BENCH_SHIM_LIB"); other != nullptr && *other != 0) {
    shim_lib = other;
  }
  DirectAndShim d;
  d.driver_handle = dlopen(driver_lib, RTLD_NOW | RTLD_LOCAL);
  d.shim_handle = dlopen(shim_lib, RTLD_NOW | RTLD_LOCAL);
  if (d.driver_handle == nullptr || d.shim_handle == nullptr) {
    std::fprintf(stderr, "cannot load driver or shim: %s\n", dlerror());
    return d;
  }
  d.direct = LoadDriverTable(d.driver_handle);
  d.shim = LoadDriverTable(d.shim_handle);
  d.ok = true;
  return d;
}

}  // namespace gshare::bench
