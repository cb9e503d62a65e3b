// Entry points: primary contexts, created contexts and the current-context stack.
#include "api.h"
#include "context.h"
#include "driver.h"
#include "mps_client.h"

namespace {

using simcuda::Driver;

CUresult CreateContext(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  CUctx_st* ctx = simcuda::NewContext(dev, flags, false);
  if (CUresult r = simcuda::MpsAttachContext(ctx); r != CUDA_SUCCESS) {
    simcuda::TeardownContext(ctx);
    return r;
  }
  simcuda::PushCurrent(ctx);
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult CheckContext(CUcontext ctx) {
  if (Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return simcuda::IsLiveContext(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// The context named by `ctx`, or the current one if null.
CUresult ContextOrCurrent(CUcontext ctx, CUctx_st** out) {
  if (ctx == nullptr) return simcuda::GetCurrent(out);
  if (CUresult r = CheckContext(ctx); r != CUDA_SUCCESS) return r;
  *out = ctx;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  simcuda::DriverState* d = Driver();
  std::lock_guard<std::mutex> lock(d->primary_mu);
  simcuda::PrimaryContext& p = d->primary[static_cast<size_t>(dev)];
  if (p.ctx == nullptr) p.ctx = simcuda::NewContext(dev, p.flags, true);
  if (p.refs == 0) {  // activation: an MPS client context from now on
    if (CUresult r = simcuda::MpsAttachContext(p.ctx); r != CUDA_SUCCESS) return r;
  }
  p.ctx->flags = p.flags;
  ++p.refs;
  *pctx = p.ctx;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  simcuda::DriverState* d = Driver();
  std::lock_guard<std::mutex> lock(d->primary_mu);
  simcuda::PrimaryContext& p = d->primary[static_cast<size_t>(dev)];
  if (p.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--p.refs == 0) simcuda::TeardownContext(p.ctx);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  simcuda::DriverState* d = Driver();
  std::lock_guard<std::mutex> lock(d->primary_mu);
  simcuda::PrimaryContext& p = d->primary[static_cast<size_t>(dev)];
  if (p.ctx != nullptr) simcuda::TeardownContext(p.ctx);
  p.refs = 0;
  p.flags = 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  simcuda::DriverState* d = Driver();
  std::lock_guard<std::mutex> lock(d->primary_mu);
  const simcuda::PrimaryContext& p = d->primary[static_cast<size_t>(dev)];
  *flags = p.flags;
  *active = p.refs > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  if ((flags & ~0x1fu) != 0) return CUDA_ERROR_INVALID_VALUE;
  simcuda::DriverState* d = Driver();
  std::lock_guard<std::mutex> lock(d->primary_mu);
  simcuda::PrimaryContext& p = d->primary[static_cast<size_t>(dev)];
  p.flags = flags;
  if (p.ctx != nullptr) p.ctx->flags = flags;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return CreateContext(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                        unsigned int flags, CUdevice dev) {
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return CreateContext(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  if (ctxCreateParams != nullptr && ctxCreateParams->cigParams != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return CreateContext(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (CUresult r = CheckContext(ctx); r != CUDA_SUCCESS) return r;
  if (ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  simcuda::ForgetContextOnThisThread(ctx);
  simcuda::TeardownContext(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (CUresult r = CheckContext(ctx); r != CUDA_SUCCESS) return r;
  simcuda::PushCurrent(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUctx_st* top = simcuda::PopCurrent();
  if (top == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = top;
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx != nullptr && !simcuda::IsLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  simcuda::SetCurrent(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUctx_st* c = simcuda::CurrentContext();
  *pctx = simcuda::IsLiveContext(c) ? c : nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  simcuda::SynchronizeContext(ctx);
  return simcuda::MpsCheck(ctx);
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = nullptr;
  if (CUresult r = ContextOrCurrent(ctx, &c); r != CUDA_SUCCESS) return r;
  *version = 3020;  // the context API version of every context since CUDA 3.2
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetFlags(unsigned int flags) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  ctx->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) {
  if (ctxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = nullptr;
  if (CUresult r = ContextOrCurrent(ctx, &c); r != CUDA_SUCCESS) return r;
  *ctxId = c->id;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  if (pvalue == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  switch (limit) {
    case CU_LIMIT_STACK_SIZE: *pvalue = 1024; return CUDA_SUCCESS;
    case CU_LIMIT_PRINTF_FIFO_SIZE: *pvalue = 1 << 20; return CUDA_SUCCESS;
    case CU_LIMIT_MALLOC_HEAP_SIZE: *pvalue = 8 << 20; return CUDA_SUCCESS;
    default: return CUDA_ERROR_UNSUPPORTED_LIMIT;
  }
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  (void)value;
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  return limit < CU_LIMIT_MAX ? CUDA_SUCCESS : CUDA_ERROR_UNSUPPORTED_LIMIT;
}

}  // extern "C"
