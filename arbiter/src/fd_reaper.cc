// FdReaper's thread: a queue of objects to destroy, drained by one detached thread (fd_reaper.h).
#include "fd_reaper.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

namespace gshare::arbiter {

struct FdReaper::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<void>> queue;  // guarded by mu
  bool stopping = false;                    // guarded by mu
  uint64_t disposed = 0;                    // guarded by mu
  uint64_t destroyed = 0;                   // guarded by mu
  bool threaded = false;  // set once before the thread starts
};

FdReaper::FdReaper() : shared_(std::make_shared<Shared>()) {
  try {
    std::thread([s = shared_] {
      std::unique_lock<std::mutex> lock(s->mu);
      for (;;) {
        s->cv.wait(lock, [&] { return s->stopping || !s->queue.empty(); });
        if (s->queue.empty()) return;  // stopping and nothing left
        std::shared_ptr<void> next = std::move(s->queue.front());
        s->queue.pop_front();
        lock.unlock();
        next.reset();  // the destructor runs here, off every caller's thread
        lock.lock();
        ++s->destroyed;
      }
    }).detach();
    shared_->threaded = true;
  } catch (const std::system_error& e) {
    // No thread (resource limits): objects are destroyed by the caller, as before.
    spdlog::error("fd reaper: cannot start its thread ({}); descriptors are closed inline",
                  e.what());
  }
}

FdReaper::~FdReaper() {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->stopping = true;
  }
  shared_->cv.notify_one();
}

void FdReaper::Enqueue(std::shared_ptr<void> object) {
  if (!shared_->threaded) {
    object.reset();
    std::lock_guard<std::mutex> lock(shared_->mu);
    ++shared_->disposed;
    ++shared_->destroyed;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->queue.push_back(std::move(object));
    ++shared_->disposed;
  }
  shared_->cv.notify_one();
}

uint64_t FdReaper::disposed() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->disposed;
}

uint64_t FdReaper::destroyed() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->destroyed;
}

}  // namespace gshare::arbiter
