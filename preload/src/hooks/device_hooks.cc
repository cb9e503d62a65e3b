// Device enumeration: the application sees exactly one CUDA device, its vGPU, and that device is
// the physical GPU the vGPU lives on (Runtime::AppDevice: GSHARE_DEVICE stand-alone, the GPU the
// arbiter assigned in arbiter mode). cuDeviceGet(0) hands out that GPU's real CUdevice; calls
// that take a CUdevice or a memory location accept it or ordinal 0 and refuse other GPUs
// (hooks/device_view.h; device_arg_hooks.cc, location_hooks.cc). Here: the calls that count,
// enumerate, search or pair devices, and the VMM access and granularity calls.
// Before cuInit (or with a configuration error) the driver's own answer or error is returned.
#include <vector>

#include "hooks/device_view.h"
#include "hooks/export.h"
#include "runtime/runtime.h"

using gshare::preload::Runtime;

namespace {

// True when the shim answers device queries (after a successful cuInit); otherwise the hook
// passes the call to the driver, which reports CUDA_ERROR_NOT_INITIALIZED itself.
bool Presenting(const Runtime& rt) { return rt.status() == CUDA_SUCCESS && rt.memory() != nullptr; }

// Both devices of a peer query name the application's one device (another GPU is hidden).
CUresult MapPair(const Runtime& rt, CUdevice* a, CUdevice* b) {
  if (const CUresult r = gshare::preload::MapDevice(rt, a); r != CUDA_SUCCESS) return r;
  return gshare::preload::MapDevice(rt, b);
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuDeviceGetCount(int* count) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  if (rt.real().cuDeviceGetCount == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = rt.real().cuDeviceGetCount(count);  // validates `count`, needs cuInit
  if (r == CUDA_SUCCESS && Presenting(rt)) *count = 1;
  return r;
}

GSHARE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  if (rt.real().cuDeviceGet == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (!Presenting(rt)) return rt.real().cuDeviceGet(device, ordinal);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  const CUdevice app = rt.AppDevice();
  (void)gshare::preload::NamesAppDevice(app, app);  // notes it as handed out
  return rt.real().cuDeviceGet(device, static_cast<int>(app));
}

GSHARE_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* device, const char* pciBusId) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  if (rt.real().cuDeviceGetByPCIBusId == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUdevice found = 0;
  const CUresult r = rt.real().cuDeviceGetByPCIBusId(&found, pciBusId);
  if (r != CUDA_SUCCESS || device == nullptr) return r == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : r;
  // Another GPU of the node is not the application's: as if it were hidden from the process.
  if (Presenting(rt) && found != rt.AppDevice()) return CUDA_ERROR_INVALID_DEVICE;
  *device = found;
  return CUDA_SUCCESS;
}

GSHARE_EXPORT CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  if (rt.real().cuDeviceCanAccessPeer == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (const CUresult r = MapPair(rt, &dev, &peerDev); r != CUDA_SUCCESS) return r;
  return rt.real().cuDeviceCanAccessPeer(canAccessPeer, dev, peerDev);
}

GSHARE_EXPORT CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib,
                                               CUdevice srcDevice, CUdevice dstDevice) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  if (rt.real().cuDeviceGetP2PAttribute == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (const CUresult r = MapPair(rt, &srcDevice, &dstDevice); r != CUDA_SUCCESS) return r;
  return rt.real().cuDeviceGetP2PAttribute(value, attrib, srcDevice, dstDevice);
}

// Memory locations name the application's one device as ordinal 0 or as its CUdevice
// (hooks/device_view.h): cuMemSetAccess and cuMemGetAllocationGranularity see the physical GPU.
GSHARE_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                      size_t count) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  if (rt.real().cuMemSetAccess == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (desc == nullptr || count == 0) return rt.real().cuMemSetAccess(ptr, size, desc, count);
  std::vector<CUmemAccessDesc> mapped;
  if (const CUresult r = gshare::preload::MapAccessDescs(rt, desc, count, &mapped);
      r != CUDA_SUCCESS) {
    return r;
  }
  return rt.real().cuMemSetAccess(ptr, size, mapped.data(), count);
}

GSHARE_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity,
                                                     const CUmemAllocationProp* prop,
                                                     CUmemAllocationGranularity_flags option) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  if (rt.real().cuMemGetAllocationGranularity == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (prop == nullptr) return rt.real().cuMemGetAllocationGranularity(granularity, prop, option);
  CUmemAllocationProp mapped = *prop;
  if (const CUresult r = gshare::preload::MapDeviceLocation(rt, &mapped.location); r != CUDA_SUCCESS) {
    return r;
  }
  return rt.real().cuMemGetAllocationGranularity(granularity, &mapped, option);
}

}  // extern "C"
