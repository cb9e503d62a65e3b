// Keeping gshare-device-plugin registered with kubelet. kubelet forgets every plugin when it
// restarts: it removes the sockets in its device-plugins directory (sometimes the directory
// itself) and creates a new kubelet.sock. The plugin therefore watches the directory (inotify,
// plus a periodic look) and compares what it finds with what it did:
//   - its own socket gone or replaced -> serve again on a fresh socket (and register again);
//   - kubelet.sock new (another inode) -> register again;
//   - kubelet.sock missing -> wait for it, saying so once.
// NextAction is that decision as pure logic; KubeletLink runs it against the file system, the
// PluginServer and kubelet's Registration service.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "config.h"
#include "plugin_service.h"

namespace gshare::deviceplugin {

struct Observed {
  bool dir_exists = false;
  uint64_t kubelet_inode = 0;  // 0: no kubelet.sock
  uint64_t plugin_inode = 0;   // 0: no plugin socket at our path
};

struct LinkState {
  uint64_t served_inode = 0;      // the socket our server bound (0: not serving)
  uint64_t registered_inode = 0;  // the kubelet.sock we registered with (0: not registered)
};

enum class LinkAction {
  kNone,           // registered and serving: nothing to do
  kStopServing,    // the directory is gone: stop the server
  kWaitDirectory,  // no directory yet
  kServe,          // (re)start the server on a fresh socket
  kWaitKubelet,    // serving, no kubelet.sock yet
  kRegister,       // serving, kubelet.sock is one we have not registered with
};

LinkAction NextAction(const Observed& seen, const LinkState& state);
const char* LinkActionName(LinkAction a);

// Calls kubelet's Registration.Register at `kubelet_socket` (deadline `timeout`).
shm::Status RegisterWithKubelet(const PluginConfig& config, std::chrono::milliseconds timeout);

class KubeletLink {
 public:
  KubeletLink(const PluginConfig& config, PluginServer& server);
  ~KubeletLink();
  KubeletLink(const KubeletLink&) = delete;
  KubeletLink& operator=(const KubeletLink&) = delete;

  // Runs until SIGTERM or SIGINT (blocked by the caller before any thread starts, read here
  // through a signalfd). Returns the signal's number.
  int Run();

 private:
  Observed Look() const;
  void Step();  // applies NextAction until it says wait or done
  void Watch();  // (re)adds the inotify watch on the directory when it exists
  void Report(const std::string& what);  // logs `what` when it differs from the last report

  const PluginConfig& config_;
  PluginServer& server_;
  LinkState state_;
  int inotify_fd_ = -1;
  int watch_ = -1;
  std::string last_report_;
  std::chrono::steady_clock::time_point next_register_{};
  std::chrono::milliseconds register_backoff_{250};
};

}  // namespace gshare::deviceplugin
