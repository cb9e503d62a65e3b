// Futex wait/wake on 32-bit words of shared mappings (shared, not FUTEX_PRIVATE: waiters and
// wakers live in different processes). Thread-safe; async-signal-safe apart from errno.
#pragma once

#include <chrono>
#include <cstdint>

#include "gshare/shm/status.h"

namespace gshare::shm {

enum class FutexWaitResult : uint8_t {
  kWoken,     // woken (or a spurious wake-up: re-check the word)
  kChanged,   // the word no longer held `expected` when the wait began (EAGAIN)
  kTimedOut,  // `timeout` elapsed
};

// Sleeps while *word == expected, up to `timeout` (measured on CLOCK_MONOTONIC; EINTR restarts
// the wait with the remaining time). REQUIRES: `word` is 4-byte aligned, in a mapping that
// stays valid for the call. Returns an error Status only for unexpected errno values.
Result<FutexWaitResult> FutexWait(const uint32_t* word, uint32_t expected,
                                  std::chrono::nanoseconds timeout);

// Wakes up to `count` waiters on `word`; returns how many were woken.
Result<int> FutexWake(const uint32_t* word, int count);

// CLOCK_MONOTONIC now, in nanoseconds. All protocol timestamps (grant deadlines, burst
// reports, event records) use this clock, which every process on the node shares.
uint64_t MonotonicNowNs();

}  // namespace gshare::shm
