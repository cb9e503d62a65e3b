// ControlServer: the arbiter's control socket, used by gshare-ctl and gshare-top
// (docs/operating.md, "Control interface"). A Unix stream socket; on each connection the peer
// sends one JSON request on one line and receives one JSON reply on one line, then the server
// closes the connection. Who may do what is decided from the peer's SO_PEERCRED uid and its
// groups (SO_PEERGROUPS) by ControlAccess.
//
// The server owns its own epoll set (listener + connections); the arbiter's loop watches fd()
// and calls Serve() when it is readable, so requests are handled on the loop thread, which owns
// the state (no locks).
//
// Ownership: owns the socket file (removed on destruction if it is still ours), the listening
// socket, the epoll fd and every connection. Thread-safety: one thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gshare/shm/status.h"
#include "gshare/shm/unique_fd.h"

namespace gshare::arbiter {

enum class ControlAccess : uint8_t { kNone, kRead, kAdmin };

struct ControlPeer {
  pid_t pid = 0;
  uid_t uid = 0;
  std::vector<gid_t> gids;  // primary group first, then supplementary groups
};

// The kernel's view of a connected Unix socket's peer, fixed at connect(): SO_PEERCRED and its
// supplementary groups (SO_PEERGROUPS). uid (uid_t)-1 when the kernel does not say.
ControlPeer PeerOf(int fd);

// Who may read (status, clients) and who may change things (drain, evict, set-slo).
// Root and the arbiter's own uid are always admins.
struct ControlAcl {
  uid_t self = 0;
  std::vector<uid_t> read_uids;
  std::vector<gid_t> read_gids;
  std::vector<uid_t> admin_uids;
  std::vector<gid_t> admin_gids;
  ControlAccess For(const ControlPeer& peer) const;
};

class ControlServer {
 public:
  // Handles one parsed request; returns the reply. Called on the thread calling Serve().
  using Handler = std::function<nlohmann::json(const nlohmann::json& request, ControlAccess access,
                                               const ControlPeer& peer)>;

  // Binds and listens at `path`, its file created with mode `mode` (shm/socket_file.h: a
  // directory another uid could swap files in is refused; a stale socket of a dead arbiter is
  // replaced; a live one is kUnavailable naming the uid that owns it, never replaced).
  static shm::Result<std::unique_ptr<ControlServer>> Listen(const std::string& path, mode_t mode,
                                                            ControlAcl acl);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Readable when a connection or a request is pending.
  int fd() const { return epoll_.get(); }
  const std::string& path() const { return path_; }

  // Accepts pending connections, reads what arrived, answers complete requests. Never blocks
  // except to write a reply (bounded by kWriteTimeout, then the connection is dropped).
  void Serve(const Handler& handler);

  static constexpr size_t kMaxRequestBytes = 64 * 1024;
  static constexpr size_t kMaxConnections = 32;  // the oldest is dropped beyond this
  static constexpr int kWriteTimeoutMs = 1000;

 private:
  struct Conn {
    shm::UniqueFd fd;
    ControlPeer peer;
    std::string buffer;
    uint64_t serial = 0;
  };
  ControlServer() = default;
  void Accept();
  void Read(int fd, const Handler& handler);
  void Close(int fd);
  void Reply(Conn& conn, const nlohmann::json& reply);

  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  ControlAcl acl_;
  shm::UniqueFd listen_;
  shm::UniqueFd epoll_;
  std::map<int, Conn> conns_;
  uint64_t next_serial_ = 0;
};

// An error reply: {"ok": false, "error": message}.
nlohmann::json ControlError(const std::string& message);

}  // namespace gshare::arbiter
