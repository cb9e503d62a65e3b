// GatedSubmission: what every work-submitting hook does around the real call — be admitted by
// the submission gate, note the stream for the in-flight tracker, call the driver, leave the
// gate — with a fast path (open gate, a stream the thread noted before) of straight-line code
// inlined into each forwarder: no call but the driver's, no locks, no syscalls, nothing of the
// hook's state in memory but the gate slot's counter. bench/preload/gated_call_instructions_bench
// counts what it adds per call (docs/preload.md, "Benchmarks").
//
// Usage (generated forwarders.cc):
//   return GatedSubmission("cuLaunchKernel", hStream, /*per_thread=*/false,
//                          [&](const RealDriver& real) { ... real.cuLaunchKernel(...) ... });
#pragma once

#include <cuda.h>

#include <cstdint>

#include "hooks/export.h"
#include "runtime/backtrace.h"
#include "runtime/runtime.h"

namespace gshare::preload {

// The gate's slow path (closed gate: a swap, the arbiter's token), out of line: the slot the
// caller entered with, or (error << 32) when it could not be admitted.
[[gnu::noinline, gnu::cold]] uint64_t AdmitSlowPacked(Runtime& rt);

// What a forwarder returns when the real driver lacks the entry point.
[[gnu::cold]] inline CUresult MissingEntryPoint(const RealDriver& real) {
  return real.handle != nullptr ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
}

// `call(real driver)` makes the real call; `api` names the hook (a string literal).
template <typename Call>
__attribute__((always_inline)) inline CUresult GatedSubmission(const char* api, CUstream stream,
                                                               bool per_thread, Call call) {
  Runtime& rt = Runtime::Get();
  unsigned slot = 0;
  if (!rt.gate().TryEnter(&slot)) [[unlikely]] {
    const uint64_t admitted = AdmitSlowPacked(rt);
    if (admitted > UINT32_MAX) return CheckResult(static_cast<CUresult>(admitted >> 32), api);
    slot = static_cast<unsigned>(admitted);
  }
  // Inside the gate, before the real call, so a drain that closes the gate afterwards sees it.
  rt.inflight().Note(stream, per_thread);
  const CUresult r = call(rt.real());
  rt.gate().Exit(slot);
  return CheckResult(r, api);
}

// The forwarders' fast path, inlined into each: the Runtime exists, the call goes to a stream
// this thread noted last time (nothing for the in-flight tracker to do; a default stream: while
// the thread's current context has not changed since, no driver call), the gate is open
// and the driver has the entry point — then it enters the gate, calls `Member` of the real
// driver and leaves. Anything else tail-calls `Slow`, the forwarder's full path
// (GatedSubmission, noinline, the same signature as the forwarder), before touching the gate,
// so no call but the driver's is on the fast path and the arguments stay where the caller put
// them.
template <auto Member, auto Slow, bool PerThread, typename... Args>
__attribute__((always_inline)) inline CUresult FastGatedCall(const char* api, CUstream stream,
                                                             Args... args) {
  Runtime* rt = Runtime::Loaded();
  if (rt == nullptr) [[unlikely]] return Slow(args...);
  const InflightTracker& tracker = rt->inflight();
  if (InflightTracker::IsExplicitStream(stream)) [[likely]] {
    if (!tracker.NotedByThisThread(stream)) [[unlikely]] return Slow(args...);
  } else if (!tracker.DefaultNotedByThisThread(stream, PerThread)) [[unlikely]] {
    return Slow(args...);
  }
  // NotedByThisThread: this thread has submitted before, so it has its gate slot.
  const unsigned slot = ThisThread().gate_slot - 1;
  if (!rt->gate().TryEnterSlot(slot)) [[unlikely]] return Slow(args...);
  const auto fn = rt->real().*Member;
  if (fn == nullptr) [[unlikely]] {
    rt->gate().Exit(slot);
    return Slow(args...);
  }
  const CUresult r = fn(args...);
  rt->gate().Exit(slot);
  return CheckResult(r, api);
}

}  // namespace gshare::preload
