// The debug control socket (see control_server.h): created owner-only (mode 0600 from birth,
// never following the umask), serving only peers of the process's own uid (and root).
#include "runtime/control_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>
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

// Binds `fd` to `addr` so that the socket file is born with mode 0600. Linux creates a Unix
// socket's file with the socket inode's mode minus the umask, so fchmod before bind sets the
// mode without a window between bind and chmod and without touching the process-wide umask
// (other threads of the application may create files meanwhile). The result is checked.
std::string BindOwnerOnly(int fd, const sockaddr_un& addr, const std::string& path) {
  if (fchmod(fd, S_IRUSR | S_IWUSR) != 0) return std::string("fchmod: ") + std::strerror(errno);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return "cannot bind control socket " + path + ": " + std::strerror(errno);
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    unlink(path.c_str());
    return "control socket " + path + " was not created owner-only; refusing to serve it";
  }
  return {};
}

// Whether a connected peer may use the socket: the process's own effective uid, or root (who
// can read the process's memory anyway). Identity from SO_PEERCRED, fixed at connect().
bool PeerAllowed(int conn, uid_t* peer_uid) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
    *peer_uid = static_cast<uid_t>(-1);
    return false;
  }
  *peer_uid = cred.uid;
  return cred.uid == geteuid() || cred.uid == 0;
}

}  // namespace

std::string ControlServer::Start(const std::string& path, Handler handler) {
  sockaddr_un addr{};
  if (!FillAddress(path, &addr)) return "control socket path too long: " + path;
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return std::string("socket: ") + std::strerror(errno);
  struct stat existing {};
  if (lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) return "control socket path " + path + " exists and is not a socket";
    if (SocketIsLive(addr)) return "control socket " + path + " is in use by a live process";
    unlink(path.c_str());  // stale socket left by a dead process
  }
  if (std::string error = BindOwnerOnly(fd.get(), addr, path); !error.empty()) return error;
  if (listen(fd.get(), 8) != 0) return std::string("listen: ") + std::strerror(errno);
  listen_fd_ = fd.release();
  path_ = path;
  handler_ = std::move(handler);
  try {
    std::thread([this] { Serve(); }).detach();
  } catch (const std::system_error& e) {  // never an exception into the application
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(path.c_str());
    return std::string("cannot start the control thread: ") + e.what();
  }
  return {};
}

void ControlServer::CloseInherited() {
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

void ControlServer::Serve() {
  const int listen_fd = listen_fd_;
  uint64_t refused = 0;
  for (;;) {
    Fd conn(accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      Log().warn("control socket {}: accept failed ({}); stopping", path_, std::strerror(errno));
      return;
    }
    if (uid_t uid = 0; !PeerAllowed(conn.get(), &uid)) {
      // Logged for the first few and then every 1000th, so a peer cannot flood the log.
      if (++refused <= 5 || refused % 1000 == 0) {
        const int64_t shown = uid == static_cast<uid_t>(-1) ? -1 : static_cast<int64_t>(uid);
        Log().warn("control socket {}: refused a peer of uid {} ({} refused so far)", path_, shown,
                   refused);
      }
      static constexpr char kRefused[] = "error permission denied\n";
      (void)send(conn.get(), kRefused, sizeof(kRefused) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      continue;
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
