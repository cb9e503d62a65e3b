// Client side of registration: connect, send the request, receive and check the reply; and the
// share query (one question and its answer on a connection of its own).
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

// Connects, sends `bytes` and receives the arbiter's first packet, all within `timeout`; the
// connection is left in `*fd`.
Result<Packet> Exchange(const std::string& socket_path, const std::vector<std::byte>& bytes,
                        std::chrono::nanoseconds timeout, UniqueFd* fd) {
  const uint64_t deadline = MonotonicNowNs() + static_cast<uint64_t>(timeout.count() < 0 ? 0 : timeout.count());
  auto connected = Connect(socket_path, deadline);
  if (!connected.ok()) return connected.status();
  *fd = std::move(connected).value();
  if (Status s = SendPacket(fd->get(), bytes, {}, Left(deadline)); !s.ok()) return s;
  return ReceivePacket(fd->get(), Left(deadline));
}

}  // namespace

std::string ArbiterSocketPath() {
  const char* env = std::getenv(kArbiterSocketEnv);
  if (env != nullptr && env[0] != '\0') return env;
  return kDefaultArbiterSocket;
}

Result<Registration> Register(const std::string& socket_path, const RegisterRequest& request,
                              std::chrono::nanoseconds timeout) {
  auto bytes = EncodeRequest(request);
  if (!bytes.ok()) return bytes.status();
  UniqueFd fd;
  auto packet = Exchange(socket_path, *bytes, timeout, &fd);
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
  reg.connection = std::move(fd);
  reg.channel = std::move(packet->fds[0]);
  reg.doorbell = std::move(packet->fds[1]);
  return reg;
}

Result<ShareAnswer> QueryShare(const std::string& socket_path, const ShareQuery& query,
                               std::chrono::nanoseconds timeout) {
  auto bytes = EncodeShareQuery(query);
  if (!bytes.ok()) return bytes.status();
  UniqueFd fd;
  auto packet = Exchange(socket_path, *bytes, timeout, &fd);
  if (!packet.ok()) return packet.status();
  if (!packet->fds.empty()) return Status(StatusCode::kMalformed, "share answer carries fds");
  auto type = PeekMessageType(packet->bytes);
  if (!type.ok()) return type.status();
  switch (*type) {
    case MessageType::kShareAnswer:
      return DecodeShareAnswer(packet->bytes);
    case MessageType::kRegisterReply: {  // the arbiter's intake refused the connection
      auto reply = DecodeReply(packet->bytes);
      if (!reply.ok()) return reply.status();
      if (reply->accepted) return Status(StatusCode::kMalformed, "a share query answered by an accepting registration reply");
      return Status(StatusCode::kRefused, "arbiter refused the share query: " + reply->reason);
    }
    case MessageType::kGoodbye: {
      auto bye = DecodeGoodbye(packet->bytes);
      if (!bye.ok()) return bye.status();
      return Status(StatusCode::kUnavailable, "arbiter is shutting down: " + bye->reason);
    }
    default:
      return Status(StatusCode::kMalformed, "a share query answered by message type " +
                                                std::to_string(static_cast<int>(*type)));
  }
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
