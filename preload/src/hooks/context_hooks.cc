// The calls that change the calling thread's current context (cuCtxSetCurrent, cuCtxPushCurrent,
// cuCtxPopCurrent): the real call, then the in-flight tracker's per-thread cache of the default
// stream is dropped (InflightTracker::CurrentContextChanged), so the thread's next submission to
// a default stream asks the driver which context is current and is tracked in that one. The
// other calls that change it drop the cache too: cuCtxCreate* (device_arg_hooks.cc), cuCtxDestroy
// and primary-context release/reset (stream_hooks.cc). Not on the hot path.
#include "hooks/export.h"
#include "runtime/backtrace.h"
#include "runtime/runtime.h"

using gshare::preload::InflightTracker;
using gshare::preload::Runtime;

namespace {

template <typename Fn, typename Arg>
CUresult ChangeCurrent(Fn real, Arg arg, const char* api) {
  const Runtime& rt = Runtime::Get();
  if (real == nullptr) return rt.driver_loaded() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(arg);
  InflightTracker::CurrentContextChanged();  // also after a failure: never trust the old one
  return gshare::preload::CheckResult(r, api);
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  return ChangeCurrent(Runtime::Get().real().cuCtxSetCurrent, ctx, "cuCtxSetCurrent");
}
GSHARE_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  return ChangeCurrent(Runtime::Get().real().cuCtxPushCurrent, ctx, "cuCtxPushCurrent");
}
GSHARE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return ChangeCurrent(Runtime::Get().real().cuCtxPushCurrent_v2, ctx, "cuCtxPushCurrent_v2");
}
GSHARE_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx) {
  return ChangeCurrent(Runtime::Get().real().cuCtxPopCurrent, pctx, "cuCtxPopCurrent");
}
GSHARE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  return ChangeCurrent(Runtime::Get().real().cuCtxPopCurrent_v2, pctx, "cuCtxPopCurrent_v2");
}

}  // extern "C"
