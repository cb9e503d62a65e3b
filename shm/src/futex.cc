// Futex wait/wake (raw syscall; glibc has no wrapper) and the monotonic clock.
#include "gshare/shm/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace gshare::shm {
namespace {

long SysFutex(const uint32_t* word, int op, uint32_t val, const timespec* ts) {
  return ::syscall(SYS_futex, word, op, val, ts, nullptr, 0);
}

}  // namespace

uint64_t MonotonicNowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

Result<FutexWaitResult> FutexWait(const uint32_t* word, uint32_t expected,
                                  std::chrono::nanoseconds timeout) {
  if (word == nullptr || (reinterpret_cast<uintptr_t>(word) & 3U) != 0) {
    return Status(StatusCode::kInvalidArgument, "futex word must be 4-byte aligned");
  }
  const int64_t total = timeout.count() < 0 ? 0 : timeout.count();
  const uint64_t deadline = MonotonicNowNs() + static_cast<uint64_t>(total);
  for (;;) {
    const uint64_t now = MonotonicNowNs();
    if (now >= deadline) return FutexWaitResult::kTimedOut;
    const uint64_t left = deadline - now;
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(left / 1'000'000'000ULL);
    ts.tv_nsec = static_cast<long>(left % 1'000'000'000ULL);
    // FUTEX_WAIT takes a relative timeout measured on CLOCK_MONOTONIC.
    if (SysFutex(word, FUTEX_WAIT, expected, &ts) == 0) return FutexWaitResult::kWoken;
    switch (errno) {
      case EAGAIN: return FutexWaitResult::kChanged;
      case ETIMEDOUT: return FutexWaitResult::kTimedOut;
      case EINTR: continue;  // a signal: wait again for the time that is left
      default: return Status::FromErrno("futex wait", errno);
    }
  }
}

Result<int> FutexWake(const uint32_t* word, int count) {
  const long n = SysFutex(word, FUTEX_WAKE, static_cast<uint32_t>(count), nullptr);
  if (n < 0) return Status::FromErrno("futex wake", errno);
  return static_cast<int>(n);
}

}  // namespace gshare::shm
