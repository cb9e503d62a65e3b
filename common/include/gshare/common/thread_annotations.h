// Thread-safety annotations for clang's -Wthread-safety analysis, and the annotated mutex,
// scoped lock and condition variable they need (libstdc++'s std::mutex carries no
// annotations, so the analysis cannot see std::lock_guard take it).
//
// The macros have Abseil's names (absl/base/thread_annotations.h) and expand to clang
// attributes under clang, to nothing elsewhere (gcc builds are unchanged):
//   GUARDED_BY(mu)          a member read or written only while `mu` is held
//   PT_GUARDED_BY(mu)       the pointee of a pointer member, ditto
//   REQUIRES(mu)            the caller holds `mu` (exclusively)
//   EXCLUDES(mu)            the caller does not hold `mu` (the function takes it)
//   ACQUIRED_BEFORE(mu...)  this mutex is taken before those when both are held (lock order;
//   ACQUIRED_AFTER(mu...)   clang checks it only with -Wthread-safety-beta)
//   ACQUIRE / RELEASE / TRY_ACQUIRE / ASSERT_CAPABILITY   what a locking function does
//   CAPABILITY(name) / SCOPED_CAPABILITY   a lock type / an RAII holder of one
//   NO_THREAD_SAFETY_ANALYSIS   turns the analysis off for one function: say why beside it
//
// Usage:
//   gshare::Mutex mu_;
//   int count_ GUARDED_BY(mu_) = 0;
//   void Bump() EXCLUDES(mu_) { gshare::MutexLock lock(mu_); ++count_; }
//   void Wait() { gshare::MutexLock lock(mu_); while (count_ == 0) cv_.Wait(mu_); }
//
// scripts/thread_safety.sh builds the shim with clang and -Werror=thread-safety.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#if defined(__clang__)
#define GSHARE_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define GSHARE_THREAD_ANNOTATION_(x)
#endif

#define CAPABILITY(x) GSHARE_THREAD_ANNOTATION_(capability(x))
#define SCOPED_CAPABILITY GSHARE_THREAD_ANNOTATION_(scoped_lockable)
#define GUARDED_BY(x) GSHARE_THREAD_ANNOTATION_(guarded_by(x))
#define PT_GUARDED_BY(x) GSHARE_THREAD_ANNOTATION_(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) GSHARE_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) GSHARE_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#define REQUIRES(...) GSHARE_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) GSHARE_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) GSHARE_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) GSHARE_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) GSHARE_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) GSHARE_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) GSHARE_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) GSHARE_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) GSHARE_THREAD_ANNOTATION_(assert_capability(x))
#define RETURN_CAPABILITY(x) GSHARE_THREAD_ANNOTATION_(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS GSHARE_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace gshare {

class CondVar;

// std::mutex with annotations. Same cost and semantics (not recursive). lock()/unlock() make
// it BasicLockable for code that needs that; prefer MutexLock.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  [[nodiscard]] bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  // Tells the analysis the caller holds the mutex where it cannot see it (checks nothing).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// std::lock_guard for Mutex, which can also drop and retake the lock inside its scope (as
// std::unique_lock's unlock()/lock() did); the destructor releases it only if held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() {
    if (locked_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    locked_ = false;
    mu_.Unlock();
  }
  void Lock() ACQUIRE() {
    mu_.Lock();
    locked_ = true;
  }

 private:
  Mutex& mu_;
  bool locked_ = true;
};

// std::condition_variable waiting on a Mutex: the very same std::condition_variable waits on
// the Mutex's std::mutex, so wake-ups, spurious wake-ups and timeouts are std's. Every wait
// REQUIRES the mutex, held again when it returns. A predicate that reads guarded members is
// declared `[&]() REQUIRES(mu_) { ... }`.
class CondVar {
 public:
  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    (void)lock.release();
  }
  template <typename Predicate>
  void Wait(Mutex& mu, Predicate pred) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock, std::move(pred));
    (void)lock.release();
  }
  template <typename Rep, typename Period>
  std::cv_status WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const std::cv_status status = cv_.wait_for(lock, timeout);
    (void)lock.release();
    return status;
  }
  // Returns pred() (false: timed out with the predicate still false).
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout, Predicate pred)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool satisfied = cv_.wait_for(lock, timeout, std::move(pred));
    (void)lock.release();
    return satisfied;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace gshare
