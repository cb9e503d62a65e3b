// ControlCall: connect, send one line, read until the server closes the connection.
#include "gshare/arbiter/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "gshare/shm/unique_fd.h"
#include "gshare/shm/unix_socket.h"

namespace gshare::arbiter {

shm::Result<nlohmann::json> ControlCall(const std::string& path, const nlohmann::json& request,
                                        std::chrono::milliseconds timeout) {
  if (auto s = shm::CheckSocketPath(path); !s.ok()) return s;
  shm::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return shm::Status::FromErrno("socket", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR)
      return shm::Status(shm::StatusCode::kUnavailable, "gshare-arbiter is not running at " + path);
    if (err == EACCES || err == EPERM)
      return shm::Status(shm::StatusCode::kPermissionDenied,
                         "permission denied opening " + path + " (socket file or directory mode)");
    return shm::Status::FromErrno("connect " + path, err);
  }
  const std::string line = request.dump() + "\n";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining_ms = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  };
  if (::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
    return shm::Status(shm::StatusCode::kClosed, "the arbiter closed the control connection");
  std::string reply;
  char buf[16384];
  for (;;) {
    pollfd p{fd.get(), POLLIN, 0};
    const int ms = remaining_ms();
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0)
      return shm::Status(shm::StatusCode::kTimeout,
                         "no reply from gshare-arbiter at " + path + " within " +
                             std::to_string(timeout.count()) + " ms");
    const ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return shm::Status::FromErrno("recv", errno);
    if (n == 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  auto j = nlohmann::json::parse(reply, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return shm::Status(shm::StatusCode::kMalformed, "malformed reply from " + path);
  return j;
}

}  // namespace gshare::arbiter
