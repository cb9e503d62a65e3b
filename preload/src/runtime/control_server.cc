// The debug control socket (see control_server.h).
#include "runtime/control_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "runtime/log.h"

namespace gshare::preload {
namespace {

// Owns one file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

bool FillAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

bool SocketIsLive(const sockaddr_un& addr) {
  Fd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (probe.get() < 0) return false;
  return connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
}

}  // namespace

std::string ControlServer::Start(const std::string& path, Handler handler) {
  sockaddr_un addr{};
  if (!FillAddress(path, &addr)) return "control socket path too long: " + path;
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return std::string("socket: ") + std::strerror(errno);
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EADDRINUSE || SocketIsLive(addr)) {
      return "cannot bind control socket " + path + ": " + std::strerror(errno);
    }
    unlink(path.c_str());  // stale socket left by a dead process
    if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      return "cannot bind control socket " + path + ": " + std::strerror(errno);
    }
  }
  if (listen(fd.get(), 8) != 0) return std::string("listen: ") + std::strerror(errno);
  listen_fd_ = fd.release();
  path_ = path;
  handler_ = std::move(handler);
  std::thread([this] { Serve(); }).detach();
  return {};
}

void ControlServer::CloseInherited() {
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

void ControlServer::Serve() {
  const int listen_fd = listen_fd_;
  for (;;) {
    Fd conn(accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      Log().warn("control socket {}: accept failed ({}); stopping", path_, std::strerror(errno));
      return;
    }
    std::string request;
    char buf[256];
    while (request.find('\n') == std::string::npos && request.size() < 4096) {
      const ssize_t n = read(conn.get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    if (const size_t nl = request.find('\n'); nl != std::string::npos) request.resize(nl);
    std::string reply = handler_(request);
    reply.push_back('\n');
    for (size_t off = 0; off < reply.size();) {
      const ssize_t n = send(conn.get(), reply.data() + off, reply.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  }
}

}  // namespace gshare::preload
