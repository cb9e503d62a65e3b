// preload_probe's driver loaders (driver.h): linked symbols, dlsym, cuGetProcAddress_v2.
#include "driver.h"

#include <dlfcn.h>

#include <cstdio>
#include <type_traits>

namespace gshare::probe {
namespace {

template <typename T>
void Dlsym(void* handle, const char* name, T* out) {
  *out = reinterpret_cast<T>(dlsym(handle, name));
}

bool LoadDlsym(Api* api) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  Dlsym(h, "cuInit", &api->init);
  Dlsym(h, "cuDeviceGet", &api->device_get);
  Dlsym(h, "cuDevicePrimaryCtxRetain", &api->primary_retain);
  Dlsym(h, "cuCtxSetCurrent", &api->ctx_set_current);
  Dlsym(h, "cuMemGetInfo_v2", &api->mem_get_info);
  Dlsym(h, "cuDeviceTotalMem_v2", &api->device_total_mem);
  Dlsym(h, "cuMemAlloc_v2", &api->mem_alloc);
  Dlsym(h, "cuMemFree_v2", &api->mem_free);
  Dlsym(h, "cuMemcpyHtoDAsync_v2", &api->memcpy_htod_async);
  Dlsym(h, "cuLaunchKernel", &api->launch_kernel);
  Dlsym(h, "cuDeviceGetCount", &api->device_get_count);
  Dlsym(h, "cuDeviceGetByPCIBusId", &api->by_pci_bus_id);
  Dlsym(h, "cuDeviceCanAccessPeer", &api->can_access_peer);
  Dlsym(h, "cuDeviceGetP2PAttribute", &api->p2p_attribute);
  Dlsym(h, "cuPointerGetAttribute", &api->pointer_attribute);
  Dlsym(h, "cuCtxCreate_v4", &api->ctx_create);
  Dlsym(h, "cuDeviceGetAttribute", &api->device_attribute);
  Dlsym(h, "cuDeviceGetDefaultMemPool", &api->default_mem_pool);
  return api->init != nullptr;
}

// As cudart does: dlopen the driver, find cuGetProcAddress_v2, ask it for every base name.
bool LoadProcAddress(Api* api, bool per_thread) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  PFN_cuGetProcAddress_v12000 get = nullptr;
  Dlsym(h, "cuGetProcAddress_v2", &get);
  if (get == nullptr) return false;
  const cuuint64_t flags =
      per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
  auto ask = [&](const char* name, auto* out) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    // Before cuInit, as cudart does.
    if (get(name, &fn, CUDA_VERSION, flags, &status) != CUDA_SUCCESS ||
        status != CU_GET_PROC_ADDRESS_SUCCESS) {
      fn = nullptr;
    }
    *out = reinterpret_cast<std::remove_reference_t<decltype(*out)>>(fn);
  };
  ask("cuInit", &api->init);
  ask("cuDeviceGet", &api->device_get);
  ask("cuDevicePrimaryCtxRetain", &api->primary_retain);
  ask("cuCtxSetCurrent", &api->ctx_set_current);
  ask("cuMemGetInfo", &api->mem_get_info);
  ask("cuDeviceTotalMem", &api->device_total_mem);
  ask("cuMemAlloc", &api->mem_alloc);
  ask("cuMemFree", &api->mem_free);
  ask("cuMemcpyHtoDAsync", &api->memcpy_htod_async);
  ask("cuLaunchKernel", &api->launch_kernel);
  ask("cuDeviceGetCount", &api->device_get_count);
  ask("cuDeviceGetByPCIBusId", &api->by_pci_bus_id);
  ask("cuDeviceCanAccessPeer", &api->can_access_peer);
  ask("cuDeviceGetP2PAttribute", &api->p2p_attribute);
  ask("cuPointerGetAttribute", &api->pointer_attribute);
  ask("cuCtxCreate", &api->ctx_create);
  ask("cuDeviceGetAttribute", &api->device_attribute);
  ask("cuDeviceGetDefaultMemPool", &api->default_mem_pool);
  return api->init != nullptr;
}

}  // namespace

bool LoadLinked(Api* api) {
  api->init = &cuInit;
  api->device_get = &cuDeviceGet;
  api->primary_retain = &cuDevicePrimaryCtxRetain;
  api->ctx_set_current = &cuCtxSetCurrent;
  api->mem_get_info = &cuMemGetInfo;
  api->device_total_mem = &cuDeviceTotalMem;
  api->mem_alloc = &cuMemAlloc;
  api->mem_free = &cuMemFree;
  api->memcpy_htod_async = reinterpret_cast<void*>(&cuMemcpyHtoDAsync);
  api->launch_kernel = reinterpret_cast<void*>(&cuLaunchKernel);
  api->device_get_count = &cuDeviceGetCount;
  api->by_pci_bus_id = &cuDeviceGetByPCIBusId;
  api->can_access_peer = &cuDeviceCanAccessPeer;
  api->p2p_attribute = &cuDeviceGetP2PAttribute;
  api->pointer_attribute = &cuPointerGetAttribute;
  api->ctx_create = &cuCtxCreate;  // cuCtxCreate_v4 in CUDA 13's cuda.h
  api->device_attribute = &cuDeviceGetAttribute;
  api->default_mem_pool = &cuDeviceGetDefaultMemPool;
  return true;
}

bool LoadBy(const std::string& how, Api* api) {
  if (how == "linked") return LoadLinked(api);
  if (how == "dlsym") return LoadDlsym(api);
  if (how == "procaddr") return LoadProcAddress(api, false);
  if (how == "procaddr-ptds") return LoadProcAddress(api, true);
  return false;
}

PFN_cuDevicePrimaryCtxGetState_v7000 PhysicalPrimaryCtxGetState() {
  PFN_cuDevicePrimaryCtxGetState_v7000 fn = nullptr;
  if (void* scope = dlopen(GSHARE_PROBE_DRIVER_SCOPE, RTLD_NOW | RTLD_LOCAL); scope != nullptr) {
    Dlsym(scope, "cuDevicePrimaryCtxGetState", &fn);  // never closed: the process keeps using it
  }
  return fn != nullptr ? fn : &cuDevicePrimaryCtxGetState;
}

std::string WhereIs(void* fn) {
  Dl_info info{};
  if (fn == nullptr || dladdr(fn, &info) == 0) return "none";
  std::string file = info.dli_fname != nullptr ? info.dli_fname : "?";
  file = file.substr(file.find_last_of('/') + 1);
  return file + ":" + (info.dli_sname != nullptr ? info.dli_sname : "?");
}

int Fail(const char* what, CUresult r) {
  std::printf("error=%s:%d\n", what, static_cast<int>(r));
  return 1;
}

CUresult SetUpContext(const Api& api) {
  if (CUresult r = api.init(0); r != CUDA_SUCCESS) return r;
  CUdevice dev = 0;
  if (CUresult r = api.device_get(&dev, 0); r != CUDA_SUCCESS) return r;
  CUcontext ctx = nullptr;
  if (CUresult r = api.primary_retain(&ctx, dev); r != CUDA_SUCCESS) return r;
  return api.ctx_set_current(ctx);
}

CUmemAllocationProp PinnedOn(int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  return prop;
}

int StartLinked(Api* api) {
  LoadLinked(api);
  if (CUresult r = SetUpContext(*api); r != CUDA_SUCCESS) return Fail("context", r);
  return 0;
}

}  // namespace gshare::probe
