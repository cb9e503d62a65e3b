// Stream and context lifetime hooks: the in-flight tracker (runtime/inflight_tracker.h) forgets a
// stream or context before the application destroys it, so the shim never queries or
// synchronises a dead handle. A stream destroyed while its work still runs is waited for first
// (the driver would finish that work after the destroy returns, out of the tracker's sight).
// Destroying or ending a context also drops the calling thread's cached default stream
// (InflightTracker::CurrentContextChanged, context_hooks.cc).
#include "hooks/device_view.h"
#include "hooks/export.h"
#include "runtime/backtrace.h"
#include "runtime/runtime.h"

using gshare::preload::Runtime;

namespace {

CUresult DestroyStream(CUresult (*real)(CUstream), CUstream stream, const char* api) {
  Runtime& rt = Runtime::Get();
  if (real == nullptr) return rt.driver_loaded() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
  rt.inflight().ForgetStreamAfterWork(stream);
  return gshare::preload::CheckResult(real(stream), api);
}

CUresult DestroyContext(CUresult (*real)(CUcontext), CUcontext ctx, const char* api) {
  Runtime& rt = Runtime::Get();
  if (real == nullptr) return rt.driver_loaded() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
  rt.inflight().ForgetContext(ctx);  // every thread's cached default stream is stale now
  const CUresult r = real(ctx);
  // Destroying the current context pops it: this thread's current context changed.
  gshare::preload::InflightTracker::CurrentContextChanged();
  return gshare::preload::CheckResult(r, api);
}

// Release/reset of a primary context: forgotten only if it is really gone afterwards. The device
// is the application's one device (hooks/device_view.h: its CUdevice or ordinal 0).
CUresult EndPrimary(CUresult (*real)(CUdevice), CUdevice dev, const char* api) {
  Runtime& rt = Runtime::Get();
  if (real == nullptr) return rt.driver_loaded() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
  if (const CUresult r = gshare::preload::MapDevice(rt, &dev); r != CUDA_SUCCESS) return r;
  // A primary context that is gone afterwards is forgotten (every thread's cache is then
  // stale); this thread's own cache is dropped either way.
  const CUresult r = rt.EndPrimaryContext(dev, real);
  gshare::preload::InflightTracker::CurrentContextChanged();
  return gshare::preload::CheckResult(r, api);
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuStreamDestroy(CUstream hStream) {
  return DestroyStream(Runtime::Get().real().cuStreamDestroy, hStream, "cuStreamDestroy");
}
GSHARE_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  return DestroyStream(Runtime::Get().real().cuStreamDestroy_v2, hStream, "cuStreamDestroy_v2");
}
GSHARE_EXPORT CUresult cuCtxDestroy(CUcontext ctx) {
  return DestroyContext(Runtime::Get().real().cuCtxDestroy, ctx, "cuCtxDestroy");
}
GSHARE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return DestroyContext(Runtime::Get().real().cuCtxDestroy_v2, ctx, "cuCtxDestroy_v2");
}
GSHARE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return EndPrimary(Runtime::Get().real().cuDevicePrimaryCtxRelease, dev,
                    "cuDevicePrimaryCtxRelease");
}
GSHARE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return EndPrimary(Runtime::Get().real().cuDevicePrimaryCtxRelease_v2, dev,
                    "cuDevicePrimaryCtxRelease_v2");
}
GSHARE_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return EndPrimary(Runtime::Get().real().cuDevicePrimaryCtxReset, dev, "cuDevicePrimaryCtxReset");
}
GSHARE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return EndPrimary(Runtime::Get().real().cuDevicePrimaryCtxReset_v2, dev,
                    "cuDevicePrimaryCtxReset_v2");
}

}  // extern "C"
