// DriverWorker's threads, queue and completion eventfd (driver_worker.h).
#include "driver_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

namespace gshare::arbiter {
namespace {

uint64_t MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

struct Pending {
  uint64_t tag = 0;
  ProcessRef proc;
  DriverWorker::Job job;
};

}  // namespace

struct DriverWorker::Shared {
  std::mutex mu;
  std::condition_variable work_cv;  // a job was queued, or stopping
  std::condition_variable idle_cv;  // a job finished
  std::deque<Pending> queue;        // guarded by mu
  std::vector<Completion> done;     // guarded by mu
  size_t running = 0;               // guarded by mu
  size_t in_flight = 0;             // guarded by mu: submitted, completion not taken
  bool stopping = false;            // guarded by mu
  shm::UniqueFd event;              // eventfd, counter > 0 while `done` is not empty
  std::vector<std::thread> threads;

  void Run() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) return;
      Pending p = std::move(queue.front());
      queue.pop_front();
      ++running;
      lock.unlock();
      const uint64_t start = MonotonicNs();
      DriverOutcome outcome = p.job(p.proc);
      outcome.duration_ns = MonotonicNs() - start;
      const uint64_t tag = p.tag;
      p = Pending{};  // the pidfd closes here, off the loop
      lock.lock();
      --running;
      const bool was_empty = done.empty();
      done.push_back({tag, std::move(outcome)});
      if (was_empty) {
        const uint64_t one = 1;
        (void)!::write(event.get(), &one, sizeof(one));
      }
      idle_cv.notify_all();
    }
  }
};

ProcessRef RefTo(pid_t pid, int pidfd) {
  ProcessRef r;
  r.pid = pid;
  if (pidfd >= 0) r.pidfd.Reset(::fcntl(pidfd, F_DUPFD_CLOEXEC, 0));
  return r;
}

bool ProcessExited(int pidfd) {
  if (pidfd < 0) return false;
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

bool Alive(const ProcessRef& proc, DriverOutcome* gone) {
  if (!ProcessExited(proc.pidfd.get())) return true;
  gone->status = shm::Status(shm::StatusCode::kClosed,
                             "pid " + std::to_string(proc.pid) + " has exited");
  return false;
}

shm::Result<std::unique_ptr<DriverWorker>> DriverWorker::Start(unsigned threads) {
  std::unique_ptr<DriverWorker> w(new DriverWorker());
  w->shared_ = std::make_shared<Shared>();
  w->shared_->event.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!w->shared_->event) return shm::Status::FromErrno("eventfd", errno);
  try {
    for (unsigned i = 0; i < std::max(1U, threads); ++i)
      w->shared_->threads.emplace_back([s = w->shared_.get()] { s->Run(); });
  } catch (const std::system_error& e) {
    if (w->shared_->threads.empty())
      return shm::Status(shm::StatusCode::kUnavailable,
                         std::string("driver worker: cannot start a thread: ") + e.what());
    spdlog::warn("driver worker: {} of {} threads started ({})", w->shared_->threads.size(),
                 threads, e.what());
  }
  return w;
}

DriverWorker::~DriverWorker() {
  if (!shared_) return;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->stopping = true;
  }
  shared_->work_cv.notify_all();
  for (auto& t : shared_->threads) t.join();
}

void DriverWorker::Submit(uint64_t tag, ProcessRef proc, Job job) {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->queue.push_back({tag, std::move(proc), std::move(job)});
    ++shared_->in_flight;
  }
  shared_->work_cv.notify_one();
}

int DriverWorker::fd() const { return shared_->event.get(); }

std::vector<DriverWorker::Completion> DriverWorker::TakeCompletions() {
  std::vector<Completion> out;
  std::lock_guard<std::mutex> lock(shared_->mu);
  uint64_t v = 0;
  (void)!::read(shared_->event.get(), &v, sizeof(v));
  out.swap(shared_->done);
  shared_->in_flight -= std::min(shared_->in_flight, out.size());
  return out;
}

size_t DriverWorker::InFlight() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->in_flight;
}

bool DriverWorker::WaitIdle(uint64_t timeout_ns) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  return shared_->idle_cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] {
    return shared_->queue.empty() && shared_->running == 0;
  });
}

}  // namespace gshare::arbiter
