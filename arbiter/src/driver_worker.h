// DriverWorker: runs the arbiter's driver calls about processes (lock, checkpoint, restore,
// move, state queries) on worker threads, off the event loop, and hands their outcomes back to
// the loop as completions (docs/arbiter.md, "Work off the loop"). A driver call about a process
// that a tenant controls can take as long as that tenant likes (a stopped process answers a
// state query only when its timeout passes; a lock waits for its in-flight work): on the loop,
// every grant, release and registration of every tenant would wait with it.
//
// Identity: every job is bound to the process that registered, by its pidfd. Right before each
// driver call the job checks that this process is still alive (its pidfd not signalled); a
// process that exited yields kGone and the driver is never asked about its pid, which another
// process may have received meanwhile.
//
// The loop submits jobs tagged with a value of its choosing (client id and operation), polls
// fd() in its epoll set and takes the completions when it is readable. The arbiter keeps at
// most one job in flight per client.
//
// Ownership: owns its threads (joined on destruction, after the jobs already started end; jobs
// not started are dropped). Thread-safety: Submit, TakeCompletions and InFlight may be called
// from any thread; jobs run concurrently on up to `threads` threads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "driver.h"
#include "gshare/shm/status.h"
#include "gshare/shm/unique_fd.h"

namespace gshare::arbiter {

// What a job tells the loop.
struct DriverOutcome {
  shm::Status status;      // the driver call's result (kGone: the process had exited)
  int state = DriverLib::kNoCudaState;  // a state query's answer (CU_PROCESS_STATE_* or kNo*)
  int detail = 0;                        // what the job did, by job (arbiter_driver.cc)
  uint64_t duration_ns = 0;              // how long the job ran
};

// The process a job is about: its pid (what the driver API takes) and a pidfd of the process
// that registered (-1 where the kernel has none: the pid alone is then used, as before).
struct ProcessRef {
  pid_t pid = 0;
  shm::UniqueFd pidfd;  // a duplicate the job owns
};

// Duplicates `pidfd` (-1 stays -1) for a ProcessRef.
ProcessRef RefTo(pid_t pid, int pidfd);

// Whether the process behind `pidfd` has exited (false for -1: unknown, taken as alive).
bool ProcessExited(int pidfd);

class DriverWorker {
 public:
  // Runs on a worker thread: may call the driver through `proc`'s pid only after checking
  // Alive(proc). Returns the outcome the loop receives.
  using Job = std::function<DriverOutcome(const ProcessRef& proc)>;

  struct Completion {
    uint64_t tag = 0;
    DriverOutcome outcome;
  };

  static shm::Result<std::unique_ptr<DriverWorker>> Start(unsigned threads);
  ~DriverWorker();
  DriverWorker(const DriverWorker&) = delete;
  DriverWorker& operator=(const DriverWorker&) = delete;

  // Queues `job` about `proc`; its completion carries `tag`.
  void Submit(uint64_t tag, ProcessRef proc, Job job);
  // An eventfd that is readable while completions wait (level: stays readable until taken).
  int fd() const;
  // Every completion ready now (in completion order).
  std::vector<Completion> TakeCompletions();
  // Jobs submitted and not yet taken as completions.
  size_t InFlight() const;
  // Waits up to `timeout_ns` until no job is queued or running (at shutdown: a thaw must finish
  // before the arbiter exits). True when idle.
  bool WaitIdle(uint64_t timeout_ns);

 private:
  struct Shared;
  DriverWorker() = default;
  std::shared_ptr<Shared> shared_;
};

// Standard checks for jobs: an outcome of kGone when `proc`'s process has exited.
bool Alive(const ProcessRef& proc, DriverOutcome* gone);

}  // namespace gshare::arbiter
