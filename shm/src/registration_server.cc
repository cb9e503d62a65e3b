// Server side of registration: listen, accept with kernel-provided peer identity, receive
// requests strictly, reply.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "gshare/shm/registration.h"
#include "gshare/shm/unix_socket.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux >= 6.5; older kernels answer ENOPROTOOPT
#endif

namespace gshare::shm {
namespace {

sockaddr_un MakeAddr(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// True if something accepts connections at `path` right now.
bool SomeoneListens(const sockaddr_un& addr) {
  UniqueFd probe(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!probe) return false;
  return ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
}

}  // namespace

RegistrationListener::~RegistrationListener() {
  if (!fd_ || path_.empty()) return;
  struct stat st{};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
}

RegistrationListener::RegistrationListener(RegistrationListener&& o) noexcept
    : fd_(std::move(o.fd_)), path_(std::move(o.path_)), dev_(o.dev_), ino_(o.ino_) {
  o.path_.clear();
}

RegistrationListener& RegistrationListener::operator=(RegistrationListener&& o) noexcept {
  if (this != &o) {
    this->~RegistrationListener();
    fd_ = std::move(o.fd_);
    path_ = std::move(o.path_);
    dev_ = o.dev_;
    ino_ = o.ino_;
    o.path_.clear();
  }
  return *this;
}

Result<RegistrationListener> RegistrationListener::Listen(const std::string& path, mode_t mode) {
  if (Status s = CheckSocketPath(path); !s.ok()) return s;
  const sockaddr_un addr = MakeAddr(path);
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status(StatusCode::kInvalidArgument, "'" + path + "' exists and is not a socket");
    }
    if (SomeoneListens(addr)) {
      return Status(StatusCode::kUnavailable, "'" + path + "' is already in use by a live arbiter");
    }
    ::unlink(path.c_str());  // stale socket of a dead arbiter
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Status::FromErrno("socket", errno);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno("bind '" + path + "'", errno);
  }
  RegistrationListener l;
  l.fd_ = std::move(fd);
  l.path_ = path;
  if (::lstat(path.c_str(), &st) != 0) return Status::FromErrno("stat '" + path + "'", errno);
  l.dev_ = st.st_dev;
  l.ino_ = st.st_ino;
  if (::chmod(path.c_str(), mode) != 0) return Status::FromErrno("chmod '" + path + "'", errno);
  if (::listen(l.fd_.get(), 128) != 0) return Status::FromErrno("listen", errno);
  return l;
}

Result<RegistrationConnection> RegistrationListener::Accept(std::chrono::nanoseconds timeout) const {
  for (;;) {
    const int fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      UniqueFd conn(fd);
      ucred cred{};
      socklen_t len = sizeof(cred);
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
        return Status::FromErrno("getsockopt(SO_PEERCRED)", errno);
      }
      int pidfd = -1;
      len = sizeof(pidfd);
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0) pidfd = -1;
      return RegistrationConnection(std::move(conn), PeerCredentials{cred.pid, cred.uid, cred.gid},
                                    UniqueFd(pidfd));
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (timeout.count() <= 0) return Status(StatusCode::kTimeout, "no pending connection");
      if (Status s = WaitFd(fd_.get(), POLLIN, timeout); !s.ok()) return s;
      timeout = std::chrono::nanoseconds(0);  // one wait only; then report what is there
      continue;
    }
    return Status::FromErrno("accept", errno);
  }
}

Result<RegisterRequest> RegistrationConnection::ReceiveRequest(std::chrono::nanoseconds timeout) const {
  auto packet = ReceivePacket(fd_.get(), timeout);
  if (!packet.ok()) return packet.status();
  if (!packet->fds.empty()) return Status(StatusCode::kMalformed, "request carries file descriptors");
  return DecodeRequest(packet->bytes);
}

Status RegistrationConnection::Accept(const RegisterReply& reply, int channel_fd, int doorbell_fd,
                                      std::chrono::nanoseconds timeout) const {
  if (!reply.accepted) return Status(StatusCode::kInvalidArgument, "Accept() needs an accepting reply");
  if (channel_fd < 0 || doorbell_fd < 0) return Status(StatusCode::kInvalidArgument, "bad fds");
  auto bytes = EncodeReply(reply);
  if (!bytes.ok()) return bytes.status();
  const int fds[2] = {channel_fd, doorbell_fd};
  return SendPacket(fd_.get(), *bytes, fds, timeout);
}

Status RegistrationConnection::Refuse(const std::string& reason, uint64_t arbiter_epoch,
                                      std::chrono::nanoseconds timeout) const {
  RegisterReply reply;
  reply.accepted = false;
  reply.reason = reason;
  reply.arbiter_epoch = arbiter_epoch;
  auto bytes = EncodeReply(reply);
  if (!bytes.ok()) return bytes.status();
  return SendPacket(fd_.get(), *bytes, {}, timeout);
}

Status RegistrationConnection::SendGoodbye(const std::string& reason,
                                           std::chrono::nanoseconds timeout) const {
  auto bytes = EncodeGoodbye(Goodbye{reason});
  if (!bytes.ok()) return bytes.status();
  return SendPacket(fd_.get(), *bytes, {}, timeout);
}

}  // namespace gshare::shm
