// preload_probe's way to the driver: the entry points a mode uses, found one of the three ways an
// unmodified program can find them (linked against libcuda, dlsym on a dlopen'ed libcuda.so.1,
// or cuGetProcAddress_v2 as cudart does), plus what every mode needs to start.
//
// Thread-safety: the loaders write only the Api they are given; the rest is stateless.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace gshare::probe {

// The entry points a probe uses, however they were found (nullptr where not found).
struct Api {
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_retain = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
  PFN_cuMemGetInfo_v3020 mem_get_info = nullptr;
  PFN_cuDeviceTotalMem_v3020 device_total_mem = nullptr;
  PFN_cuMemAlloc_v3020 mem_alloc = nullptr;
  PFN_cuMemFree_v3020 mem_free = nullptr;
  void* memcpy_htod_async = nullptr;  // only inspected: which function did we get?
  void* launch_kernel = nullptr;
  PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;
  PFN_cuDeviceGetByPCIBusId_v4010 by_pci_bus_id = nullptr;
  PFN_cuDeviceCanAccessPeer_v4000 can_access_peer = nullptr;
  PFN_cuDeviceGetP2PAttribute_v8000 p2p_attribute = nullptr;
  PFN_cuPointerGetAttribute_v4000 pointer_attribute = nullptr;
  PFN_cuCtxCreate_v12050 ctx_create = nullptr;
  PFN_cuDeviceGetAttribute_v2000 device_attribute = nullptr;
  PFN_cuDeviceGetDefaultMemPool_v11020 default_mem_pool = nullptr;
};

// The entry points the program is linked against (always succeeds).
bool LoadLinked(Api* api);

// `how`: "linked", "dlsym", "procaddr" or "procaddr-ptds" (cuGetProcAddress_v2 with the
// per-thread default stream flag). False for another word or when cuInit was not found.
bool LoadBy(const std::string& how, Api* api);

// cuDevicePrimaryCtxGetState of the driver itself, past a preloaded shim: looked up in the
// dependency scope of libpreload_probe_driver_scope.so (probe/driver_scope.cc), which holds
// libcuda.so.1 but not the shim. The linked function when that library cannot be opened.
PFN_cuDevicePrimaryCtxGetState_v7000 PhysicalPrimaryCtxGetState();

// "library:symbol" of the function at `fn` (library without its folder), "none" for nullptr or
// an address no loaded object holds.
std::string WhereIs(void* fn);

// Prints "error=<what>:<r>" and returns the probe's failure exit code (1).
int Fail(const char* what, CUresult r);

// cuInit, device 0's primary context, made current on the calling thread.
CUresult SetUpContext(const Api& api);

// VMM: the properties of pinned physical memory on the device with ordinal `ordinal`.
CUmemAllocationProp PinnedOn(int ordinal);

// LoadLinked + SetUpContext: how most modes start. Returns 0, or Fail("context", ...)'s code.
int StartLinked(Api* api);

}  // namespace gshare::probe
