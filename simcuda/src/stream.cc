// Stream workers and the legacy default stream's synchronisation rules (see stream.h).
#include "stream.h"

#include <atomic>

#include "context.h"
#include "driver.h"
#include "handle_set.h"
#include "mps_client.h"
#include "sim_clock.h"

namespace simcuda {
namespace {

std::atomic<unsigned long long> g_next_stream_id{1};

void WorkerLoop(std::shared_ptr<StreamCore> core) {
  std::unique_lock<std::mutex> lock(core->mu);
  while (true) {
    core->cv.wait(lock, [&] { return core->stop || !core->queue.empty(); });
    if (core->queue.empty()) return;  // stop requested and drained
    StreamCore::Op op = std::move(core->queue.front());
    core->queue.pop_front();
    uint64_t start = core->cursor_ns > op.submit_ns ? core->cursor_ns : op.submit_ns;
    lock.unlock();
    uint64_t end = op.fn(start);
    lock.lock();
    core->cursor_ns = end > start ? end : start;
    ++core->completed;
    core->cv.notify_all();
  }
}

// An operation that waits for another stream's ticket.
OpFn WaitOp(std::shared_ptr<StreamCore> target, uint64_t ticket) {
  return [target = std::move(target), ticket](uint64_t start) {
    uint64_t cursor = WaitForTicket(*target, ticket);
    return cursor > start ? cursor : start;
  };
}

// The ticket that waits for all of `s`'s work so far, or 0 if it is idle.
uint64_t PendingTicket(CUstream_st* s) {
  std::lock_guard<std::mutex> lock(s->core->mu);
  return s->core->completed < s->core->submitted ? s->core->submitted : 0;
}

uint64_t Enqueue(CUstream_st* s, OpFn fn) {
  uint64_t now = SimNowNs();
  std::lock_guard<std::mutex> lock(s->core->mu);
  s->core->queue.push_back({std::move(fn), now});
  s->core->cv.notify_all();
  return ++s->core->submitted;
}

// The per-thread default streams this thread created; destroyed (after draining) when the
// thread exits, so short-lived threads do not leave workers behind.
struct PerThreadStreams {
  std::vector<std::pair<CUctx_st*, CUstream_st*>> streams;
  ~PerThreadStreams() {
    for (auto& [ctx, s] : streams) {
      if (!IsLiveContext(ctx) || !IsLiveStream(s)) continue;
      {
        std::lock_guard<std::mutex> lock(ctx->mu);
        auto it = ctx->per_thread.find(std::this_thread::get_id());
        if (it == ctx->per_thread.end() || it->second != s) continue;
        ctx->per_thread.erase(it);
      }
      DeleteStream(s);
    }
  }
};

}  // namespace

uint64_t WaitForTicket(StreamCore& core, uint64_t ticket) {
  std::unique_lock<std::mutex> lock(core.mu);
  core.cv.wait(lock, [&] { return core.completed >= ticket; });
  return core.cursor_ns;
}

CUstream_st* NewStream(CUctx_st* ctx, unsigned flags, int priority, StreamKind kind) {
  auto* s = new CUstream_st();
  s->magic = kStreamMagic;
  s->ctx = ctx;
  s->flags = flags;
  s->priority = priority;
  s->kind = kind;
  s->id = g_next_stream_id.fetch_add(1);
  s->core = std::make_shared<StreamCore>();
  s->worker = std::thread(WorkerLoop, s->core);
  HandleSet<CUstream_st>::Instance().Add(s);
  return s;
}

void DeleteStream(CUstream_st* s) {
  HandleSet<CUstream_st>::Instance().Remove(s);
  {
    std::lock_guard<std::mutex> lock(s->core->mu);
    s->core->stop = true;
    s->core->cv.notify_all();
  }
  if (s->worker.joinable()) {
    if (s->worker.get_id() == std::this_thread::get_id()) {
      s->worker.detach();  // destroyed from its own callback: the worker exits after draining
    } else {
      s->worker.join();
    }
  }
  s->magic = 0;
  delete s;
}

bool IsLiveStream(CUstream_st* s) { return HandleSet<CUstream_st>::Instance().Contains(s); }

CUresult ResolveStream(CUstream h, bool per_thread_entry, CUstream_st** out) {
  if (Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  bool legacy = h == nullptr ? !per_thread_entry : h == CU_STREAM_LEGACY;
  bool per_thread = h == nullptr ? per_thread_entry : h == CU_STREAM_PER_THREAD;
  if (!legacy && !per_thread) {
    if (!IsLiveStream(h)) return CUDA_ERROR_INVALID_HANDLE;
    *out = h;
    return CUDA_SUCCESS;
  }
  CUctx_st* ctx = nullptr;
  CUresult r = GetCurrent(&ctx);
  if (r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (legacy) {
    *out = ctx->legacy;
    return CUDA_SUCCESS;
  }
  CUstream_st*& pts = ctx->per_thread[std::this_thread::get_id()];
  if (pts == nullptr) {
    pts = NewStream(ctx, 0, 0, StreamKind::kPerThread);
    thread_local PerThreadStreams mine;
    mine.streams.emplace_back(ctx, pts);
  }
  *out = pts;
  return CUDA_SUCCESS;
}

CUresult Submit(CUstream_st* s, OpFn fn, uint64_t* ticket) {
  WaitIfLocked();
  if (CUresult r = MpsCheck(s->ctx); r != CUDA_SUCCESS) return r;
  if (s->capture_status.load() != CU_STREAM_CAPTURE_STATUS_NONE) {
    s->capture_status.store(CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  CUctx_st* ctx = s->ctx;
  if (s->kind == StreamKind::kLegacy) {
    // The legacy stream waits for all blocking streams of its context.
    std::vector<std::pair<std::shared_ptr<StreamCore>, uint64_t>> waits;
    {
      std::lock_guard<std::mutex> lock(ctx->mu);
      auto consider = [&](CUstream_st* o) {
        if (o == s || (o->flags & CU_STREAM_NON_BLOCKING) != 0) return;
        if (uint64_t t = PendingTicket(o); t != 0) waits.emplace_back(o->core, t);
      };
      for (CUstream_st* o : ctx->streams) consider(o);
      for (auto& [tid, o] : ctx->per_thread) consider(o);
    }
    for (auto& [core, t] : waits) Enqueue(s, WaitOp(core, t));
  } else if ((s->flags & CU_STREAM_NON_BLOCKING) == 0 && ctx->legacy != nullptr) {
    // Blocking streams wait for the legacy stream's earlier work.
    if (uint64_t t = PendingTicket(ctx->legacy); t != 0) Enqueue(s, WaitOp(ctx->legacy->core, t));
  }
  uint64_t t = Enqueue(s, std::move(fn));
  if (ticket != nullptr) *ticket = t;
  return CUDA_SUCCESS;
}

void SynchronizeStream(CUstream_st* s) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(s->core->mu);
    ticket = s->core->submitted;
  }
  WaitForTicket(*s->core, ticket);
}

bool StreamIdle(CUstream_st* s) {
  std::lock_guard<std::mutex> lock(s->core->mu);
  return s->core->completed >= s->core->submitted;
}

CUresult SubmitAndWait(CUstream_st* s, OpFn fn) {
  uint64_t ticket = 0;
  CUresult r = Submit(s, std::move(fn), &ticket);
  if (r != CUDA_SUCCESS) return r;
  WaitForTicket(*s->core, ticket);
  return CUDA_SUCCESS;
}

}  // namespace simcuda
