// SOCK_SEQPACKET send/receive with SCM_RIGHTS and poll-based deadlines.
#include "gshare/shm/unix_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "gshare/shm/futex.h"

namespace gshare::shm {
namespace {

constexpr size_t kControlBytes = CMSG_SPACE(sizeof(int) * kMaxPacketFds);
// The kernel's limit of descriptors in one message (SCM_MAX_FD): a receive buffer this large is
// never truncated, so no descriptor is dropped (and its file released) inside recvmsg.
constexpr size_t kKernelMaxFds = 253;
constexpr size_t kReceiveControlBytes = CMSG_SPACE(sizeof(int) * kKernelMaxFds);
#ifndef SO_PASSRIGHTS
constexpr int SO_PASSRIGHTS = 83;  // Linux >= 6.16 (asm-generic/socket.h)
#endif

uint64_t DeadlineFrom(std::chrono::nanoseconds timeout) {
  const int64_t t = timeout.count() < 0 ? 0 : timeout.count();
  return MonotonicNowNs() + static_cast<uint64_t>(t);
}

std::chrono::nanoseconds Left(uint64_t deadline) {
  const uint64_t now = MonotonicNowNs();
  return std::chrono::nanoseconds(now >= deadline ? 0 : static_cast<int64_t>(deadline - now));
}

// Closes every fd carried in the control messages of `msg` and counts them.
size_t CollectFds(msghdr* msg, std::vector<UniqueFd>* out) {
  size_t n = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* data = CMSG_DATA(c);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      out->emplace_back(fd);
      ++n;
    }
  }
  return n;
}

}  // namespace

Status WaitFd(int fd, short events, std::chrono::nanoseconds timeout) {
  const uint64_t deadline = DeadlineFrom(timeout);
  for (;;) {
    pollfd p{fd, events, 0};
    const auto left = Left(deadline);
    // Round up to whole milliseconds so a short positive timeout still waits.
    const int64_t left_ms = (left.count() + 999'999) / 1'000'000;
    const int ms = static_cast<int>(left_ms > 3'600'000 ? 3'600'000 : left_ms);  // re-armed after
    const int r = ::poll(&p, 1, ms);
    if (r > 0) return {};
    if (r == 0) {
      if (Left(deadline).count() == 0) return Status(StatusCode::kTimeout, "timed out waiting on socket");
      continue;
    }
    if (errno == EINTR) continue;
    return Status::FromErrno("poll", errno);
  }
}

Status CheckSocketPath(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty()) return Status(StatusCode::kInvalidArgument, "socket path is empty");
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status(StatusCode::kInvalidArgument,
                  "socket path '" + path + "' is longer than " +
                      std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  }
  return {};
}

Status SendPacket(int socket_fd, std::span<const std::byte> bytes, std::span<const int> fds,
                  std::chrono::nanoseconds timeout) {
  if (fds.size() > kMaxPacketFds || bytes.size() > kMaxPacketBytes) {
    return Status(StatusCode::kInvalidArgument, "packet too large");
  }
  const uint64_t deadline = DeadlineFrom(timeout);
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) unsigned char control[kControlBytes] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    const ssize_t n = ::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes.size())) return {};
    if (n >= 0) return Status(StatusCode::kOsError, "short send on a seqpacket socket");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Status s = WaitFd(socket_fd, POLLOUT, Left(deadline)); !s.ok()) return s;
      continue;
    }
    return Status::FromErrno("sendmsg", errno);
  }
}

Status RefuseDescriptors(int fd) {
  const int off = 0;
  if (::setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off)) == 0) return {};
  if (errno == ENOPROTOOPT || errno == EINVAL)
    return Status(StatusCode::kUnavailable, "SO_PASSRIGHTS is not supported by this kernel");
  return Status::FromErrno("setsockopt(SO_PASSRIGHTS)", errno);
}

Result<Packet> ReceivePacket(int socket_fd, std::chrono::nanoseconds timeout,
                             std::vector<UniqueFd>* carried) {
  const uint64_t deadline = DeadlineFrom(timeout);
  Packet packet;
  packet.bytes.resize(kMaxPacketBytes);
  for (;;) {
    iovec iov{packet.bytes.data(), packet.bytes.size()};
    alignas(cmsghdr) unsigned char control[kReceiveControlBytes] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (Status s = WaitFd(socket_fd, POLLIN, Left(deadline)); !s.ok()) return s;
        continue;
      }
      return Status::FromErrno("recvmsg", errno);
    }
    const size_t fds = CollectFds(&msg, carried != nullptr ? carried : &packet.fds);
    // Owned now: closed on every error path below (or the caller's, in `carried`).
    if ((msg.msg_flags & MSG_CTRUNC) != 0 || fds > kMaxPacketFds) {
      return Status(StatusCode::kMalformed, "packet carries too many file descriptors");
    }
    if ((msg.msg_flags & MSG_TRUNC) != 0) {
      return Status(StatusCode::kMalformed,
                    "packet longer than " + std::to_string(kMaxPacketBytes) + " bytes");
    }
    if (n == 0) return Status(StatusCode::kClosed, "peer closed the connection");
    packet.bytes.resize(static_cast<size_t>(n));
    return packet;
  }
}

}  // namespace gshare::shm
