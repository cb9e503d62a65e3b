// Streams: each stream has a worker thread that runs its operations in submission order.
// An operation is a function of its simulated start time returning its simulated end time;
// the stream's cursor (end of the previous operation) orders simulated time within a stream.
// The legacy default stream synchronises with the context's blocking streams (both ways), per
// the CUDA stream-synchronisation rules; CU_STREAM_NON_BLOCKING streams do not.
// Thread-safety: every function here is thread-safe.
#ifndef SIMCUDA_SRC_STREAM_H_
#define SIMCUDA_SRC_STREAM_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "api.h"

namespace simcuda {

// Runs at simulated time `start_ns` (already >= the previous op's end and the submission time)
// and returns its simulated end time.
using OpFn = std::function<uint64_t(uint64_t start_ns)>;

enum class StreamKind { kUser, kLegacy, kPerThread };

// The part of a stream that operations of other streams may wait on; outlives the stream.
struct StreamCore {
  std::mutex mu;
  std::condition_variable cv;
  struct Op {
    OpFn fn;
    uint64_t submit_ns;
  };
  std::deque<Op> queue;
  uint64_t submitted = 0;   // tickets handed out
  uint64_t completed = 0;   // tickets done
  uint64_t cursor_ns = 0;   // simulated end of the last completed op
  bool stop = false;
};

// Blocks until `core` has completed ticket `ticket`; returns its cursor then.
uint64_t WaitForTicket(StreamCore& core, uint64_t ticket);

}  // namespace simcuda

struct CUstream_st {
  uint32_t magic;
  CUctx_st* ctx;
  unsigned flags;
  int priority;
  simcuda::StreamKind kind;
  unsigned long long id;
  std::shared_ptr<simcuda::StreamCore> core;
  std::thread worker;
  // Capture state (simcuda does not build graphs; see docs/simcuda.md).
  std::atomic<int> capture_status{0};  // CUstreamCaptureStatus
  unsigned long long capture_id = 0;
};

namespace simcuda {

inline constexpr uint32_t kStreamMagic = 0x53544d31;  // "STM1"

CUstream_st* NewStream(CUctx_st* ctx, unsigned flags, int priority, StreamKind kind);
// Drains and joins the worker, then frees the stream. REQUIRES: no other thread submits to it.
void DeleteStream(CUstream_st* s);
bool IsLiveStream(CUstream_st* s);

// Resolves a stream argument: NULL (legacy, or per-thread if `per_thread_entry`),
// CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a stream handle. Needs a current context for the
// special handles. Returns INVALID_HANDLE / INVALID_CONTEXT / NOT_INITIALIZED on failure.
CUresult ResolveStream(CUstream h, bool per_thread_entry, CUstream_st** out);

// Submits an operation (after the implicit waits of the legacy-stream rules); returns its ticket.
// Returns 0 and fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when the stream is capturing.
CUresult Submit(CUstream_st* s, OpFn fn, uint64_t* ticket = nullptr);
// Waits for everything submitted to `s` so far.
void SynchronizeStream(CUstream_st* s);
// True if every operation submitted to `s` has completed.
bool StreamIdle(CUstream_st* s);
// Submits `fn` and waits for it (synchronous copies and memsets).
CUresult SubmitAndWait(CUstream_st* s, OpFn fn);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_STREAM_H_
