// What simcuda-mps-control (simcuda/mps/) and its clients (mps_client.cc) share: the pipe and log
// directories, the daemon's state file (its liveness lock and what it serves) and the control
// socket's messages. docs/simcuda.md "MPS mode" describes them.
//
//   <pipe dir>/simcuda-mps  the daemon's state: "key value" lines (FormatDaemonInfo); the daemon
//                           holds an open-file-description write lock on its byte 0 while it
//                           lives, so any process in any pid namespace that sees the directory
//                           can tell whether it is alive (the kernel drops the lock at its death)
//   <pipe dir>/control      a Unix stream socket. A client process sends "hello\n" and keeps the
//                           connection for its life (reply "ok <server id>\n" or "refused
//                           <reason>\n"; later the daemon may send "terminate\n", answered with
//                           "terminated\n"). The control program sends one command line, shuts
//                           down its writing side and reads the reply until EOF.
// Thread-safety: the functions are thread-safe (no shared state).
#ifndef SIMCUDA_SRC_MPS_PROTOCOL_H_
#define SIMCUDA_SRC_MPS_PROTOCOL_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simcuda {

inline constexpr const char* kMpsStateFile = "simcuda-mps";
inline constexpr const char* kMpsControlSocket = "control";

// CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps) and CUDA_MPS_LOG_DIRECTORY (default
// /var/log/nvidia-mps), without a trailing '/'.
std::string MpsPipeDirectory();
std::string MpsLogDirectory();

struct MpsDaemonInfo {
  int pid = 0;                  // the daemon's pid in its own pid namespace
  std::string registry;         // the registry file of the devices it serves
  std::vector<int> devices;     // the ordinals it serves (CUDA_VISIBLE_DEVICES)
  int max_clients = 48;         // client contexts per device
  double context_mib_per_sm = 2.0;
};

std::string FormatDaemonInfo(const MpsDaemonInfo& info);
// False (and the reason) on a malformed state file.
bool ParseDaemonInfo(std::string_view text, MpsDaemonInfo* info, std::string* error);

// The daemon serving `pipe_dir`, if one is alive there (its state file is locked).
std::optional<MpsDaemonInfo> FindLiveDaemon(const std::string& pipe_dir);

// A connected stream socket to `<pipe_dir>/control`, or -1 (errno set).
int ConnectToDaemon(const std::string& pipe_dir);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_MPS_PROTOCOL_H_
