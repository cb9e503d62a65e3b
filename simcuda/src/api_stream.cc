// Entry points: streams (create, destroy, synchronise, query, wait on events, host functions,
// callbacks, capture status).
#include <atomic>

#include "api.h"
#include "context.h"
#include "driver.h"
#include "event.h"
#include "handle_set.h"
#include "mps_client.h"
#include "sim_clock.h"
#include "stream.h"

namespace {

std::atomic<unsigned long long> g_next_capture_id{1};

CUresult CreateStream(CUstream* phStream, unsigned int flags, int priority) {
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  if (priority > 0) priority = 0;
  if (priority < -5) priority = -5;
  CUstream_st* s = simcuda::NewStream(ctx, flags, priority, simcuda::StreamKind::kUser);
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    ctx->streams.push_back(s);
  }
  *phStream = s;
  return CUDA_SUCCESS;
}

CUresult Resolve(CUstream h, bool pt, CUstream_st** s) { return simcuda::ResolveStream(h, pt, s); }

CUresult Synchronize(CUstream h, bool pt) {
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  if (s->capture_status.load() != CU_STREAM_CAPTURE_STATUS_NONE) {
    s->capture_status.store(CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  simcuda::SynchronizeStream(s);
  return simcuda::MpsCheck(s->ctx);
}

CUresult Query(CUstream h, bool pt) {
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  return simcuda::StreamIdle(s) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult WaitEvent(CUstream h, CUevent ev, unsigned flags, bool pt) {
  if (flags != 0 && flags != CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  if (!simcuda::HandleSet<CUevent_st>::Instance().Contains(ev)) return CUDA_ERROR_INVALID_HANDLE;
  std::shared_ptr<simcuda::EventCore> core = ev->core;
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(core->mu);
    gen = core->recorded;
  }
  if (gen == 0) return CUDA_SUCCESS;  // never recorded: nothing to wait for
  return simcuda::Submit(s, [core, gen](uint64_t start) {
    std::unique_lock<std::mutex> lock(core->mu);
    core->cv.wait(lock, [&] { return core->completed >= gen; });
    return core->time_ns > start ? core->time_ns : start;
  });
}

CUresult HostFunc(CUstream h, CUhostFn fn, void* data, bool pt) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  return simcuda::Submit(s, [fn, data](uint64_t start) {
    fn(data);
    uint64_t now = simcuda::SimNowNs();  // host work takes real time
    return now > start ? now : start;
  });
}

CUresult AddCallback(CUstream h, CUstreamCallback cb, void* data, unsigned flags, bool pt) {
  if (cb == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  CUstream handle = h;
  return simcuda::Submit(s, [cb, data, handle](uint64_t start) {
    cb(handle, CUDA_SUCCESS, data);
    uint64_t now = simcuda::SimNowNs();
    return now > start ? now : start;
  });
}

CUresult GetFlags(CUstream h, unsigned* flags, bool pt) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  *flags = s->flags;
  return CUDA_SUCCESS;
}

CUresult GetPriority(CUstream h, int* priority, bool pt) {
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  *priority = s->priority;
  return CUDA_SUCCESS;
}

CUresult GetCtx(CUstream h, CUcontext* pctx, bool pt) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  *pctx = s->ctx;
  return CUDA_SUCCESS;
}

CUresult GetId(CUstream h, unsigned long long* id, bool pt) {
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  *id = s->id;
  return CUDA_SUCCESS;
}

CUresult GetDevice(CUstream h, CUdevice* dev, bool pt) {
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  *dev = s->ctx->device;
  return CUDA_SUCCESS;
}

CUresult BeginCapture(CUstream h, CUstreamCaptureMode mode, bool pt) {
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  if (s->kind == simcuda::StreamKind::kLegacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  int expected = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!s->capture_status.compare_exchange_strong(expected, CU_STREAM_CAPTURE_STATUS_ACTIVE)) {
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  s->capture_id = g_next_capture_id.fetch_add(1);
  return CUDA_SUCCESS;
}

CUresult EndCapture(CUstream h, CUgraph* graph, bool pt) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *graph = nullptr;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  int status = s->capture_status.exchange(CU_STREAM_CAPTURE_STATUS_NONE);
  if (status == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_ERROR_ILLEGAL_STATE;
  if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  return CUDA_ERROR_NOT_SUPPORTED;  // simcuda does not build graphs
}

CUresult IsCapturing(CUstream h, CUstreamCaptureStatus* status, bool pt) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  *status = static_cast<CUstreamCaptureStatus>(s->capture_status.load());
  return CUDA_SUCCESS;
}

CUresult CaptureInfo(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                     const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* num_deps, bool pt) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = Resolve(h, pt, &s); r != CUDA_SUCCESS) return r;
  *status = static_cast<CUstreamCaptureStatus>(s->capture_status.load());
  bool active = *status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id != nullptr && active) *id = s->capture_id;
  if (graph != nullptr) *graph = nullptr;
  if (deps != nullptr) *deps = nullptr;
  if (edges != nullptr) *edges = nullptr;
  if (num_deps != nullptr) *num_deps = 0;
  return CUDA_SUCCESS;
}

}  // namespace

#define SIMCUDA_PAIR(NAME, SUFFIX, PARAMS, CALL)                    \
  CUresult NAME PARAMS { constexpr bool kPt = false; return CALL; } \
  CUresult NAME##SUFFIX PARAMS { constexpr bool kPt = true; return CALL; }

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) { return CreateStream(phStream, Flags, 0); }

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return CreateStream(phStream, flags, priority);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (!simcuda::IsLiveStream(hStream) || hStream->kind != simcuda::StreamKind::kUser) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  CUctx_st* ctx = hStream->ctx;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    std::erase(ctx->streams, hStream);
  }
  simcuda::DeleteStream(hStream);
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }

SIMCUDA_PAIR(cuStreamSynchronize, _ptsz, (CUstream h), Synchronize(h, kPt))
SIMCUDA_PAIR(cuStreamQuery, _ptsz, (CUstream h), Query(h, kPt))
SIMCUDA_PAIR(cuStreamWaitEvent, _ptsz, (CUstream h, CUevent e, unsigned int f), WaitEvent(h, e, f, kPt))
SIMCUDA_PAIR(cuLaunchHostFunc, _ptsz, (CUstream h, CUhostFn fn, void* d), HostFunc(h, fn, d, kPt))
SIMCUDA_PAIR(cuStreamAddCallback, _ptsz, (CUstream h, CUstreamCallback cb, void* d, unsigned int f),
             AddCallback(h, cb, d, f, kPt))
SIMCUDA_PAIR(cuStreamGetFlags, _ptsz, (CUstream h, unsigned int* f), GetFlags(h, f, kPt))
SIMCUDA_PAIR(cuStreamGetPriority, _ptsz, (CUstream h, int* p), GetPriority(h, p, kPt))
SIMCUDA_PAIR(cuStreamGetCtx, _ptsz, (CUstream h, CUcontext* c), GetCtx(h, c, kPt))
SIMCUDA_PAIR(cuStreamGetId, _ptsz, (CUstream h, unsigned long long* id), GetId(h, id, kPt))
SIMCUDA_PAIR(cuStreamGetDevice, _ptsz, (CUstream h, CUdevice* d), GetDevice(h, d, kPt))
SIMCUDA_PAIR(cuStreamBeginCapture, _ptsz, (CUstream h), BeginCapture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, kPt))
SIMCUDA_PAIR(cuStreamBeginCapture_v2, _ptsz, (CUstream h, CUstreamCaptureMode m), BeginCapture(h, m, kPt))
SIMCUDA_PAIR(cuStreamEndCapture, _ptsz, (CUstream h, CUgraph* g), EndCapture(h, g, kPt))
SIMCUDA_PAIR(cuStreamIsCapturing, _ptsz, (CUstream h, CUstreamCaptureStatus* st), IsCapturing(h, st, kPt))
SIMCUDA_PAIR(cuStreamGetCaptureInfo, _ptsz, (CUstream h, CUstreamCaptureStatus* st, cuuint64_t* id),
             CaptureInfo(h, st, id, nullptr, nullptr, nullptr, nullptr, kPt))
SIMCUDA_PAIR(cuStreamGetCaptureInfo_v2, _ptsz,
             (CUstream h, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* g, const CUgraphNode** d, size_t* n),
             CaptureInfo(h, st, id, g, d, nullptr, n, kPt))
SIMCUDA_PAIR(cuStreamGetCaptureInfo_v3, _ptsz,
             (CUstream h, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* g, const CUgraphNode** d,
              const CUgraphEdgeData** e, size_t* n),
             CaptureInfo(h, st, id, g, d, e, n, kPt))

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  thread_local CUstreamCaptureMode current = CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUstreamCaptureMode old = current;
  current = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

}  // extern "C"
