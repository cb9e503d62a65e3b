// ControlServer: the control socket's framing (one JSON line in, one JSON line out), peer
// credentials and access decisions. What the commands do is in arbiter_control.cc.
#include "control_server.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "gshare/shm/socket_file.h"
#include "gshare/shm/unix_socket.h"

namespace gshare::arbiter {
namespace {

bool Contains(const std::vector<uint32_t>& v, uint32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

ControlPeer PeerOf(int fd) {
  ControlPeer peer;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
    peer.uid = static_cast<uid_t>(-1);  // unknown: no access
    return peer;
  }
  peer.pid = cred.pid;
  peer.uid = cred.uid;
  peer.gids.push_back(cred.gid);
  std::vector<gid_t> groups(64);
  len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0 && errno == ERANGE) {
    groups.resize(len / sizeof(gid_t) + 1);
    len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0) len = 0;
  }
  groups.resize(len / sizeof(gid_t));
  peer.gids.insert(peer.gids.end(), groups.begin(), groups.end());
  return peer;
}

ControlAccess ControlAcl::For(const ControlPeer& peer) const {
  if (peer.uid == static_cast<uid_t>(-1)) return ControlAccess::kNone;
  if (peer.uid == 0 || peer.uid == self || Contains(admin_uids, peer.uid))
    return ControlAccess::kAdmin;
  for (gid_t g : peer.gids)
    if (Contains(admin_gids, g)) return ControlAccess::kAdmin;
  if (Contains(read_uids, peer.uid)) return ControlAccess::kRead;
  for (gid_t g : peer.gids)
    if (Contains(read_gids, g)) return ControlAccess::kRead;
  return ControlAccess::kNone;
}

nlohmann::json ControlError(const std::string& message) {
  return {{"ok", false}, {"error", message}};
}

shm::Result<std::unique_ptr<ControlServer>> ControlServer::Listen(const std::string& path,
                                                                  mode_t mode, ControlAcl acl) {
  // Directory, stale and impostor checks as for the registration socket (shm/socket_file.h).
  if (auto s = shm::PrepareSocketPath(path, SOCK_STREAM); !s.ok()) return s;
  std::unique_ptr<ControlServer> s(new ControlServer());
  s->acl_ = std::move(acl);
  s->listen_.Reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  s->epoll_.Reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!s->listen_ || !s->epoll_) return shm::Status::FromErrno("control socket", errno);
  // No descriptor a peer chooses ever reaches the loop (closing one can block: docs/security.md).
  if (auto r = shm::RefuseDescriptors(s->listen_.get()); !r.ok())
    spdlog::warn("control socket: {}: descriptors sent to it are received (and closed)",
                 r.ToString());
  // Born with `mode` (fchmod before bind); nothing is chmod()ed by path.
  auto id = shm::BindSocketFile(s->listen_.get(), path, mode);
  if (!id.ok()) return id.status();
  s->path_ = path;
  s->dev_ = id->dev;
  s->ino_ = id->ino;
  if (::listen(s->listen_.get(), 64) != 0) return shm::Status::FromErrno("listen", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = s->listen_.get();
  if (::epoll_ctl(s->epoll_.get(), EPOLL_CTL_ADD, s->listen_.get(), &ev) != 0)
    return shm::Status::FromErrno("epoll_ctl", errno);
  return s;
}

ControlServer::~ControlServer() {
  struct stat st{};
  if (!path_.empty() && ::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlink(path_.c_str());
}

void ControlServer::Serve(const Handler& handler) {
  epoll_event events[16];
  const int n = ::epoll_wait(epoll_.get(), events, 16, 0);
  for (int i = 0; i < n; ++i) {
    if (events[i].data.fd == listen_.get()) {
      Accept();
    } else {
      Read(events[i].data.fd, handler);
    }
  }
}

void ControlServer::Accept() {
  for (;;) {
    const int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) spdlog::warn("control accept: {}", std::strerror(errno));
      return;
    }
    if (conns_.size() >= kMaxConnections) {
      auto oldest = std::min_element(conns_.begin(), conns_.end(), [](const auto& a, const auto& b) {
        return a.second.serial < b.second.serial;
      });
      Close(oldest->first);
    }
    Conn c;
    c.fd.Reset(fd);
    c.peer = PeerOf(fd);
    c.serial = next_serial_++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) continue;  // c closes fd
    conns_.emplace(fd, std::move(c));
  }
}

void ControlServer::Close(int fd) {
  (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  conns_.erase(fd);
}

void ControlServer::Read(int fd, const Handler& handler) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  char buf[4096];
  for (;;) {
    const ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
    if (r > 0) {
      c.buffer.append(buf, static_cast<size_t>(r));
      if (c.buffer.size() > kMaxRequestBytes) {
        Reply(c, ControlError("request longer than " + std::to_string(kMaxRequestBytes) + " bytes"));
        Close(fd);
        return;
      }
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // EOF or error: a request without its newline is still answered if complete.
    if (c.buffer.empty() || r < 0) {
      Close(fd);
      return;
    }
    c.buffer.push_back('\n');
    break;
  }
  const auto nl = c.buffer.find('\n');
  if (nl == std::string::npos) return;  // wait for the rest
  const std::string line = c.buffer.substr(0, nl);
  const ControlAccess access = acl_.For(c.peer);
  nlohmann::json reply;
  if (access == ControlAccess::kNone) {
    spdlog::warn("control: uid {} (pid {}) is not authorised", c.peer.uid, c.peer.pid);
    reply = ControlError("uid " + std::to_string(c.peer.uid) +
                         " is not authorised to use the gshare-arbiter control socket");
  } else {
    auto request = nlohmann::json::parse(line, nullptr, false);
    if (request.is_discarded() || !request.is_object()) {
      reply = ControlError("malformed request: expected one JSON object on one line");
    } else {
      reply = handler(request, access, c.peer);
    }
  }
  Reply(c, reply);
  Close(fd);
}

void ControlServer::Reply(Conn& conn, const nlohmann::json& reply) {
  const std::string text =
      reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  size_t off = 0;
  int budget_ms = kWriteTimeoutMs;  // in total, for a slow reader
  while (off < text.size()) {
    const ssize_t w = ::send(conn.fd.get(), text.data() + off, text.size() - off, MSG_NOSIGNAL);
    if (w > 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{conn.fd.get(), POLLOUT, 0};
      if (budget_ms > 0 && ::poll(&p, 1, 10) >= 0) {
        budget_ms -= 10;
        continue;
      }
    }
    spdlog::debug("control: reply to pid {} dropped", conn.peer.pid);
    return;
  }
}

}  // namespace gshare::arbiter
