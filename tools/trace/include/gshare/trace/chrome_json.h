// Rendering a Timeline as Chrome/Perfetto trace-event JSON (the "JSON Object Format": an
// object with traceEvents, displayTimeUnit and otherData), loadable in ui.perfetto.dev and
// chrome://tracing. Layout (docs/tracing.md):
//  - one process per GPU ("GPU <ordinal>", pid kGpuPidBase + ordinal): a "token" thread whose
//    complete ("X") events name the function holding the token, and counters "reserved" and
//    "resident" (bytes);
//  - one process per vGPU ("<function> (pid P, client C)", pid = the function's pid, or
//    kClientPidBase + client id when unknown or shared): threads "requests" (bursts, with the
//    burst analysis in args), "token" (waits and holds, instants for preemptions), "swaps"
//    (swap-in / swap-out with bytes and direction), and counters "reserved" and "resident";
//  - metadata ("M") events naming every process and thread.
// Timestamps are microseconds since the earliest time in the trace (otherData.base_ns, the
// CLOCK_MONOTONIC nanoseconds it corresponds to). Slices on one thread never overlap.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "gshare/trace/timeline.h"

namespace gshare::trace {

inline constexpr int64_t kGpuPidBase = 10'000'000;     // above Linux's PID_MAX_LIMIT (2^22)
inline constexpr int64_t kClientPidBase = 20'000'000;
inline constexpr int64_t kThreadIdBase = 30'000'000;

struct JsonOptions {
  std::string source;  // the ring's path, recorded in otherData
};

// Pure. The result is valid by ValidateTraceJson (validate.h).
nlohmann::json ToChromeJson(const Timeline& timeline, const JsonOptions& options);

// The name of an unregister record's reason (docs/protocol.md, the event ring's record types);
// "unknown" for a value this version does not know.
const char* UnregisterReasonName(uint64_t reason);

}  // namespace gshare::trace
