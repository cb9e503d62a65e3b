// Shim diagnostics (GSHARE_BACKTRACE=1): when a hook returns a CUDA error, the call stack that
// led to it (libunwind, symbolised with unw_get_proc_name and dladdr) goes into the shim's log,
// so a function's owner sees which line of their program made the failing call. Rate-limited
// (10 at once, then one a second; the rest are counted). Only into a log file: nothing is
// written unless GSHARE_LOG_FILE is set (the application's stderr stays untouched), and not
// for results that are answers rather than failures (CUDA_ERROR_NOT_READY from queries).
//
// Thread-safety: everything here may be called from any thread, concurrently. Nothing throws.
#pragma once

#include <cuda.h>

#include <string>

namespace gshare::preload {

// The error path: logs a backtrace of the caller if enabled, allowed by the rate limit and
// `result` is a failure. `api` names the hook (a string literal; not owned).
void OnHookError(CUresult result, const char* api) noexcept;

// What hooks wrap their result in: one compare on success.
inline CUresult CheckResult(CUresult result, const char* api) noexcept {
  if (result != CUDA_SUCCESS) [[unlikely]]
    OnHookError(result, api);
  return result;
}

// The current thread's stack, innermost first, skipping `skip` frames above the caller of this
// function, one "#n 0xIP function+0xOFF (module)" line per frame, at most `max_frames`.
std::string CaptureBacktrace(int skip, int max_frames);

// True for results hooks return that are not failures worth a backtrace.
bool IsExpectedResult(CUresult result);

}  // namespace gshare::preload
