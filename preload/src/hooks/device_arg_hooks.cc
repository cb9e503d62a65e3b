// Calls that take a CUdevice argument: the application sees one device (docs/multi-gpu.md), so
// its CUdevice or ordinal 0 — a literal 0 is common in driver-API code (cuCtxCreate(&c, 0, 0),
// cuDevicePrimaryCtxRetain(&c, 0), cuDeviceGetAttribute(&v, attr, 0)) — is passed to the driver
// as the physical GPU the vGPU lives on; another value is CUDA_ERROR_INVALID_DEVICE
// (hooks/device_view.h). Not submission calls: nothing here is on the hot path. Calls with a
// device argument that need more than this are elsewhere: device_hooks.cc (peer queries),
// query_hooks.cc (cuDeviceTotalMem, cuDeviceTotalMem_v2), stream_hooks.cc (primary context release/reset),
// location_hooks.cc (cuMemAdvise, cuMemPrefetchAsync).
#include <utility>

#include "hooks/device_view.h"
#include "hooks/export.h"

using gshare::preload::RealDriver;
using gshare::preload::Runtime;

namespace {

// Calls the real `member` with `args` once `*dev` (one of them, passed by reference) is mapped.
template <typename Member, typename... Args>
CUresult OnAppDevice(Member RealDriver::*member, CUdevice* dev, Args&&... args) {
  const Runtime& rt = Runtime::Get();
  if (rt.status() != CUDA_SUCCESS) return rt.status();
  const auto fn = rt.real().*member;
  if (fn == nullptr) return rt.driver_loaded() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
  if (const CUresult r = gshare::preload::MapDevice(rt, dev); r != CUDA_SUCCESS) return r;
  return fn(std::forward<Args>(args)...);
}

// cuCtxCreate* make the new context current on the calling thread: the in-flight tracker's
// cached default stream of this thread is dropped (context_hooks.cc), whatever the result.
CUresult NewCurrentContext(CUresult r) {
  gshare::preload::InflightTracker::CurrentContextChanged();
  return r;
}

}  // namespace

extern "C" {

// Contexts.
GSHARE_EXPORT CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return NewCurrentContext(OnAppDevice(&RealDriver::cuCtxCreate, &dev, pctx, flags, dev));
}
GSHARE_EXPORT CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return NewCurrentContext(OnAppDevice(&RealDriver::cuCtxCreate_v2, &dev, pctx, flags, dev));
}
GSHARE_EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray,
                                      int numParams, unsigned int flags, CUdevice dev) {
  return NewCurrentContext(OnAppDevice(&RealDriver::cuCtxCreate_v3, &dev, pctx, paramsArray, numParams, flags, dev));
}
GSHARE_EXPORT CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams,
                                      unsigned int flags, CUdevice dev) {
  return NewCurrentContext(OnAppDevice(&RealDriver::cuCtxCreate_v4, &dev, pctx, ctxCreateParams, flags, dev));
}
GSHARE_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev,
                                        unsigned int flags) {
  return OnAppDevice(&RealDriver::cuGreenCtxCreate, &dev, phCtx, desc, dev, flags);
}

// Primary contexts (release and reset: stream_hooks.cc).
GSHARE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDevicePrimaryCtxRetain, &dev, pctx, dev);
}
GSHARE_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  return OnAppDevice(&RealDriver::cuDevicePrimaryCtxGetState, &dev, dev, flags, active);
}
GSHARE_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return OnAppDevice(&RealDriver::cuDevicePrimaryCtxSetFlags, &dev, dev, flags);
}
GSHARE_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return OnAppDevice(&RealDriver::cuDevicePrimaryCtxSetFlags_v2, &dev, dev, flags);
}

// Device properties.
GSHARE_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetAttribute, &dev, pi, attrib, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetName, &dev, name, len, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetUuid, &dev, uuid, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetUuid_v2, &dev, uuid, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetLuid(char* luid, unsigned int* deviceNodeMask, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetLuid, &dev, luid, deviceNodeMask, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetPCIBusId, &dev, pciBusId, len, dev);
}
GSHARE_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceComputeCapability, &dev, major, minor, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetProperties, &dev, prop, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements,
                                                          CUarray_format format,
                                                          unsigned numChannels, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetTexture1DLinearMaxWidth, &dev, maxWidthInElements,
                     format, numChannels, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetExecAffinitySupport(int* pi, CUexecAffinityType type,
                                                      CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetExecAffinitySupport, &dev, pi, type, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetNvSciSyncAttributes(void* nvSciSyncAttrList, CUdevice dev,
                                                      int flags) {
  return OnAppDevice(&RealDriver::cuDeviceGetNvSciSyncAttributes, &dev, nvSciSyncAttrList, dev,
                     flags);
}
GSHARE_EXPORT CUresult cuDeviceGetHostAtomicCapabilities(unsigned int* capabilities,
                                                         const CUatomicOperation* operations,
                                                         unsigned int count, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetHostAtomicCapabilities, &dev, capabilities,
                     operations, count, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource* resource,
                                              CUdevResourceType type) {
  return OnAppDevice(&RealDriver::cuDeviceGetDevResource, &device, device, resource, type);
}

// Memory pools and graph memory of the device.
GSHARE_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetDefaultMemPool, &dev, pool_out, dev);
}
GSHARE_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuDeviceGetMemPool, &dev, pool, dev);
}
GSHARE_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  return OnAppDevice(&RealDriver::cuDeviceSetMemPool, &dev, dev, pool);
}
GSHARE_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                    void* value) {
  return OnAppDevice(&RealDriver::cuDeviceGetGraphMemAttribute, &device, device, attr, value);
}
GSHARE_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                    void* value) {
  return OnAppDevice(&RealDriver::cuDeviceSetGraphMemAttribute, &device, device, attr, value);
}
GSHARE_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device) {
  return OnAppDevice(&RealDriver::cuDeviceGraphMemTrim, &device, device);
}

// Notifications, kernels, arrays and multicast objects on the device.
GSHARE_EXPORT CUresult cuDeviceRegisterAsyncNotification(CUdevice device,
                                                         CUasyncCallback callbackFunc,
                                                         void* userData,
                                                         CUasyncCallbackHandle* callback) {
  return OnAppDevice(&RealDriver::cuDeviceRegisterAsyncNotification, &device, device, callbackFunc,
                     userData, callback);
}
GSHARE_EXPORT CUresult cuDeviceUnregisterAsyncNotification(CUdevice device,
                                                           CUasyncCallbackHandle callback) {
  return OnAppDevice(&RealDriver::cuDeviceUnregisterAsyncNotification, &device, device, callback);
}
GSHARE_EXPORT CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel,
                                            CUdevice dev) {
  return OnAppDevice(&RealDriver::cuKernelGetAttribute, &dev, pi, attrib, kernel, dev);
}
GSHARE_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                            CUdevice dev) {
  return OnAppDevice(&RealDriver::cuKernelSetAttribute, &dev, attrib, val, kernel, dev);
}
GSHARE_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuKernelSetCacheConfig, &dev, kernel, config, dev);
}
GSHARE_EXPORT CUresult cuArrayGetMemoryRequirements(
    CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements, CUarray array, CUdevice device) {
  return OnAppDevice(&RealDriver::cuArrayGetMemoryRequirements, &device, memoryRequirements, array,
                     device);
}
GSHARE_EXPORT CUresult cuMipmappedArrayGetMemoryRequirements(
    CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements, CUmipmappedArray mipmap, CUdevice device) {
  return OnAppDevice(&RealDriver::cuMipmappedArrayGetMemoryRequirements, &device,
                     memoryRequirements, mipmap, device);
}
GSHARE_EXPORT CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) {
  return OnAppDevice(&RealDriver::cuMulticastAddDevice, &dev, mcHandle, dev);
}
GSHARE_EXPORT CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                         size_t mcOffset, size_t size) {
  return OnAppDevice(&RealDriver::cuMulticastUnbind, &dev, mcHandle, dev, mcOffset, size);
}

// Two devices: both must name the application's one device.
GSHARE_EXPORT CUresult cuDeviceGetP2PAtomicCapabilities(unsigned int* capabilities,
                                                        const CUatomicOperation* operations,
                                                        unsigned int count, CUdevice srcDevice,
                                                        CUdevice dstDevice) {
  if (const CUresult r = gshare::preload::MapDevice(Runtime::Get(), &srcDevice);
      r != CUDA_SUCCESS) {
    return r;
  }
  return OnAppDevice(&RealDriver::cuDeviceGetP2PAtomicCapabilities, &dstDevice, capabilities,
                     operations, count, srcDevice, dstDevice);
}

}  // extern "C"
