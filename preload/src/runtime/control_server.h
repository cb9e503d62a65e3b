// ControlServer: a tiny debug control channel for the shim, served from one background thread
// on a Unix stream socket (GSHARE_CONTROL_SOCKET). Each connection carries one request line and
// gets one reply line, then closes. No signal handlers are involved; the arbiter issue replaces
// this with arbiter-driven swaps.
//
// Security: the socket file is created with mode 0600 whatever the umask (fchmod before bind),
// and a connection from a peer whose uid (SO_PEERCRED) is neither the process's effective uid
// nor root gets "error permission denied" and is closed without running the handler.
//
// Ownership: owns the listening socket and removes its path when Stop() is called; the thread is
// detached (process-lifetime). Thread-safety: Start/Stop from one thread; the handler runs on
// the server thread.
#pragma once

#include <functional>
#include <string>

namespace gshare::preload {

class ControlServer {
 public:
  using Handler = std::function<std::string(const std::string& request)>;

  // Binds `path` owner-only (refusing to replace a live socket or a non-socket, replacing a
  // stale socket) and starts serving.
  // Returns an error message, empty on success.
  std::string Start(const std::string& path, Handler handler);
  // Closes the listening socket (inherited copy in a forked child) without touching the path.
  void CloseInherited();

 private:
  void Serve();
  int listen_fd_ = -1;
  std::string path_;
  Handler handler_;
};

}  // namespace gshare::preload
