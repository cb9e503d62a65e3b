// Client side of registration: connect, send the request, receive and check the reply.
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "gshare/shm/futex.h"
#include "gshare/shm/registration.h"
#include "gshare/shm/unix_socket.h"

namespace gshare::shm {
namespace {

std::chrono::nanoseconds Left(uint64_t deadline) {
  const uint64_t now = MonotonicNowNs();
  return std::chrono::nanoseconds(now >= deadline ? 0 : static_cast<int64_t>(deadline - now));
}

Result<UniqueFd> Connect(const std::string& path, uint64_t deadline) {
  if (Status s = CheckSocketPath(path); !s.ok()) return s;
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Status::FromErrno("socket", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  for (;;) {
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {  // listen backlog full: retry until the deadline
      if (Left(deadline).count() == 0) {
        return Status(StatusCode::kTimeout, "arbiter at '" + path + "' is not accepting");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    const int err = errno;
    Status s = Status::FromErrno("connect to arbiter socket '" + path + "'", err);
    if (err == ENOENT || err == ECONNREFUSED) {
      return Status(StatusCode::kUnavailable, s.message(), err);
    }
    return s;
  }
}

}  // namespace

std::string ArbiterSocketPath() {
  const char* env = std::getenv(kArbiterSocketEnv);
  if (env != nullptr && env[0] != '\0') return env;
  return kDefaultArbiterSocket;
}

Result<Registration> Register(const std::string& socket_path, const RegisterRequest& request,
                              std::chrono::nanoseconds timeout) {
  const uint64_t deadline = MonotonicNowNs() + static_cast<uint64_t>(timeout.count() < 0 ? 0 : timeout.count());
  auto bytes = EncodeRequest(request);
  if (!bytes.ok()) return bytes.status();
  auto fd = Connect(socket_path, deadline);
  if (!fd.ok()) return fd.status();
  if (Status s = SendPacket(fd->get(), *bytes, {}, Left(deadline)); !s.ok()) return s;
  auto packet = ReceivePacket(fd->get(), Left(deadline));
  if (!packet.ok()) return packet.status();
  auto type = PeekMessageType(packet->bytes);
  if (!type.ok()) return type.status();
  if (*type == MessageType::kGoodbye) {
    auto bye = DecodeGoodbye(packet->bytes);
    if (!bye.ok()) return bye.status();
    return Status(StatusCode::kUnavailable, "arbiter is shutting down: " + bye->reason);
  }
  auto reply = DecodeReply(packet->bytes);
  if (!reply.ok()) return reply.status();
  if (!reply->accepted) {
    if (!packet->fds.empty()) return Status(StatusCode::kMalformed, "refusal carries fds");
    return Status(StatusCode::kRefused, "arbiter refused registration: " + reply->reason);
  }
  if (packet->fds.size() != 2) {
    return Status(StatusCode::kMalformed, "accepting reply carries " +
                                              std::to_string(packet->fds.size()) +
                                              " fds instead of 2 (channel, doorbell)");
  }
  Registration reg;
  reg.reply = std::move(reply).value();
  reg.connection = std::move(fd).value();
  reg.channel = std::move(packet->fds[0]);
  reg.doorbell = std::move(packet->fds[1]);
  return reg;
}

Result<Goodbye> ReceiveGoodbye(int connection_fd, std::chrono::nanoseconds timeout) {
  auto packet = ReceivePacket(connection_fd, timeout);
  if (!packet.ok()) return packet.status();
  if (!packet->fds.empty()) return Status(StatusCode::kMalformed, "goodbye carries fds");
  return DecodeGoodbye(packet->bytes);
}

Status SendClientGoodbye(int connection_fd, const std::string& reason,
                         std::chrono::nanoseconds timeout) {
  auto bytes = EncodeGoodbye(Goodbye{reason});
  if (!bytes.ok()) return bytes.status();
  return SendPacket(connection_fd, *bytes, {}, timeout);
}

}  // namespace gshare::shm
