// Doorbell: an eventfd the client rings to wake the arbiter's epoll loop. The arbiter creates
// it at registration and passes it to the client with SCM_RIGHTS; the client rings it only when
// the channel says the arbiter is asleep (ClientChannel::NotifyArbiter), so the common case
// makes no system call. Thread-safe (eventfd writes and reads are atomic).
#pragma once

#include "gshare/shm/status.h"
#include "gshare/shm/unique_fd.h"

namespace gshare::shm {

class Doorbell {
 public:
  Doorbell() = default;
  explicit Doorbell(UniqueFd fd) : fd_(std::move(fd)) {}

  // Creates a non-blocking, close-on-exec eventfd.
  static Result<Doorbell> Create();

  // Adds one to the counter (wakes an epoll waiting for EPOLLIN). Never blocks: a saturated
  // counter (EAGAIN) already wakes the arbiter and counts as success.
  Status Ring() const;
  // Reads and clears the counter; returns how many rings were pending (0 if none).
  Result<uint64_t> Drain() const;

  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  UniqueFd& owned_fd() { return fd_; }

 private:
  UniqueFd fd_;
};

}  // namespace gshare::shm
