// Server side of registration: listen, accept with kernel-provided peer identity, receive
// requests strictly, reply.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "gshare/shm/registration.h"
#include "gshare/shm/socket_file.h"
#include "gshare/shm/unix_socket.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux >= 6.5; older kernels answer ENOPROTOOPT
#endif

namespace gshare::shm {
namespace {

}  // namespace

RegistrationListener::~RegistrationListener() {
  if (!fd_ || path_.empty()) return;
  struct stat st{};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
}

RegistrationListener::RegistrationListener(RegistrationListener&& o) noexcept
    : fd_(std::move(o.fd_)),
      path_(std::move(o.path_)),
      dev_(o.dev_),
      ino_(o.ino_),
      refuses_descriptors_(o.refuses_descriptors_) {
  o.path_.clear();
}

RegistrationListener& RegistrationListener::operator=(RegistrationListener&& o) noexcept {
  if (this != &o) {
    this->~RegistrationListener();
    fd_ = std::move(o.fd_);
    path_ = std::move(o.path_);
    dev_ = o.dev_;
    ino_ = o.ino_;
    refuses_descriptors_ = o.refuses_descriptors_;
    o.path_.clear();
  }
  return *this;
}

Result<RegistrationListener> RegistrationListener::Listen(const std::string& path, mode_t mode) {
  // The directory must be one no other uid can swap files in; a live socket there (ours or an
  // impostor's, named by its uid) is refused, a dead one removed (socket_file.h).
  if (Status s = PrepareSocketPath(path, SOCK_SEQPACKET); !s.ok()) return s;
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Status::FromErrno("socket", errno);
  // Clients never send descriptors: the kernel refuses them (accepted sockets inherit it), so
  // none a peer chose can make the arbiter block closing it (docs/security.md).
  const bool refuses = RefuseDescriptors(fd.get()).ok();
  // The file is born with `mode` (fchmod before bind); nothing is chmod()ed by path.
  auto id = BindSocketFile(fd.get(), path, mode);
  if (!id.ok()) return id.status();
  RegistrationListener l;
  l.fd_ = std::move(fd);
  l.path_ = path;
  l.refuses_descriptors_ = refuses;
  l.dev_ = id->dev;
  l.ino_ = id->ino;
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

Result<RegisterRequest> RegistrationConnection::ReceiveRequest(
    std::chrono::nanoseconds timeout, std::vector<UniqueFd>* carried) const {
  auto opening = ReceiveOpening(timeout, carried);
  if (!opening.ok()) return opening.status();
  if (!opening->request) {
    return Status(StatusCode::kMalformed,
                  "unexpected message type " + std::to_string(static_cast<int>(MessageType::kShareQuery)));
  }
  return std::move(*opening->request);
}

Result<RegistrationConnection::Opening> RegistrationConnection::ReceiveOpening(
    std::chrono::nanoseconds timeout, std::vector<UniqueFd>* carried) const {
  std::vector<UniqueFd> local;
  std::vector<UniqueFd>* sink = carried != nullptr ? carried : &local;
  const size_t before = sink->size();
  auto packet = ReceivePacket(fd_.get(), timeout, sink);
  if (!packet.ok()) return packet.status();
  if (sink->size() != before) return Status(StatusCode::kMalformed, "request carries file descriptors");
  auto type = PeekMessageType(packet->bytes);
  if (!type.ok()) return type.status();
  Opening opening;
  if (*type == MessageType::kShareQuery) {
    auto query = DecodeShareQuery(packet->bytes);
    if (!query.ok()) return query.status();
    opening.query = std::move(query).value();
    return opening;
  }
  auto request = DecodeRequest(packet->bytes);
  if (!request.ok()) return request.status();
  opening.request = std::move(request).value();
  return opening;
}

Status RegistrationConnection::Answer(const ShareAnswer& answer,
                                      std::chrono::nanoseconds timeout) const {
  auto bytes = EncodeShareAnswer(answer);
  if (!bytes.ok()) return bytes.status();
  return SendPacket(fd_.get(), *bytes, {}, timeout);
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
