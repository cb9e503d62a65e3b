// Entry points: events (create, destroy, record, query, synchronise, elapsed simulated time).
#include "api.h"
#include "context.h"
#include "driver.h"
#include "event.h"
#include "handle_set.h"
#include "stream.h"

namespace {

using EventSet = simcuda::HandleSet<CUevent_st>;

CUresult CheckEvent(CUevent e) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return EventSet::Instance().Contains(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Record(CUevent e, CUstream h, unsigned flags, bool pt) {
  if (CUresult r = CheckEvent(e); r != CUDA_SUCCESS) return r;
  if ((flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = simcuda::ResolveStream(h, pt, &s); r != CUDA_SUCCESS) return r;
  std::shared_ptr<simcuda::EventCore> core = e->core;
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(core->mu);
    gen = ++core->recorded;
  }
  CUresult r = simcuda::Submit(s, [core, gen](uint64_t start) {
    std::lock_guard<std::mutex> lock(core->mu);
    if (gen > core->completed) {
      core->completed = gen;
      core->time_ns = start;
    }
    core->cv.notify_all();
    return start;
  });
  if (r != CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lock(core->mu);
    if (core->recorded == gen) --core->recorded;
  }
  return r;
}

}  // namespace

extern "C" {

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr unsigned kKnown = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if ((Flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_EVENT_INTERPROCESS) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  CUctx_st* ctx = nullptr;
  if (CUresult r = simcuda::GetCurrent(&ctx); r != CUDA_SUCCESS) return r;
  auto* e = new CUevent_st();
  e->magic = simcuda::kEventMagic;
  e->flags = Flags;
  e->core = std::make_shared<simcuda::EventCore>();
  EventSet::Instance().Add(e);
  *phEvent = e;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  if (CUresult r = CheckEvent(hEvent); r != CUDA_SUCCESS) return r;
  if (!EventSet::Instance().Remove(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  hEvent->magic = 0;
  delete hEvent;  // queued records keep the shared core alive
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }

CUresult cuEventRecord(CUevent e, CUstream s) { return Record(e, s, 0, false); }
CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return Record(e, s, 0, true); }
CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int f) { return Record(e, s, f, false); }
CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int f) { return Record(e, s, f, true); }

CUresult cuEventQuery(CUevent hEvent) {
  if (CUresult r = CheckEvent(hEvent); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(hEvent->core->mu);
  return hEvent->core->completed >= hEvent->core->recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  if (CUresult r = CheckEvent(hEvent); r != CUDA_SUCCESS) return r;
  simcuda::EventCore& core = *hEvent->core;
  std::unique_lock<std::mutex> lock(core.mu);
  uint64_t gen = core.recorded;
  core.cv.wait(lock, [&] { return core.completed >= gen; });
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckEvent(hStart); r != CUDA_SUCCESS) return r;
  if (CUresult r = CheckEvent(hEnd); r != CUDA_SUCCESS) return r;
  if (((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) != 0) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t t0, t1;
  {
    std::lock_guard<std::mutex> lock(hStart->core->mu);
    if (hStart->core->recorded == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (hStart->core->completed < hStart->core->recorded) return CUDA_ERROR_NOT_READY;
    t0 = hStart->core->time_ns;
  }
  {
    std::lock_guard<std::mutex> lock(hEnd->core->mu);
    if (hEnd->core->recorded == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (hEnd->core->completed < hEnd->core->recorded) return CUDA_ERROR_NOT_READY;
    t1 = hEnd->core->time_ns;
  }
  double ms = (static_cast<double>(t1) - static_cast<double>(t0)) / 1e6;
  *pMilliseconds = static_cast<float>(ms);
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

}  // extern "C"
