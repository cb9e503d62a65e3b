// Doorbell: eventfd creation, ring and drain.
#include "gshare/shm/doorbell.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace gshare::shm {

Result<Doorbell> Doorbell::Create() {
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Status::FromErrno("eventfd", errno);
  return Doorbell(UniqueFd(fd));
}

Status Doorbell::Ring() const {
  const uint64_t one = 1;
  for (;;) {
    if (::write(fd_.get(), &one, sizeof(one)) == static_cast<ssize_t>(sizeof(one))) return {};
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return {};  // counter saturated: the arbiter is woken anyway
    return Status::FromErrno("doorbell write", errno);
  }
}

Result<uint64_t> Doorbell::Drain() const {
  uint64_t value = 0;
  for (;;) {
    if (::read(fd_.get(), &value, sizeof(value)) == static_cast<ssize_t>(sizeof(value))) {
      return value;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return uint64_t{0};
    return Status::FromErrno("doorbell read", errno);
  }
}

}  // namespace gshare::shm
