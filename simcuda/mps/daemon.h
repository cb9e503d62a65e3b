// simcuda-mps-control's daemon: publishes its state file (liveness lock + what it serves) in
// the pipe directory, serves the control socket (MPS clients' connections and control
// commands), keeps one "server" per uid and answers get_server_list, get_client_list,
// terminate_client and quit. See docs/simcuda.md "MPS mode".
// Thread-safety: one thread (Run's event loop) uses an MpsDaemon.
#ifndef SIMCUDA_MPS_DAEMON_H_
#define SIMCUDA_MPS_DAEMON_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "mps_protocol.h"

namespace simcuda::mps {

class MpsDaemon {
 public:
  // Reads the configuration (SIMCUDA_*, CUDA_VISIBLE_DEVICES, CUDA_MPS_PIPE_DIRECTORY,
  // CUDA_MPS_LOG_DIRECTORY), opens control.log, binds the control socket and publishes the
  // state file. False with the reason in `error` (e.g. another daemon serves the directory).
  bool Start(std::string* error);
  // Serves until "quit" (or SIGTERM/SIGINT); removes the state file and the socket.
  void Run();

 private:
  struct Connection {
    int fd = -1;
    std::string input;
    bool client = false;  // an MPS client process (said hello), else a control command
    uid_t uid = 0;
    pid_t pid = 0;        // in the daemon's pid namespace (SO_PEERCRED): host pids on the host
  };
  void Accept();
  // False when the connection is finished (closed by the peer or answered).
  bool Serve(Connection& c);
  std::string Execute(const std::string& command);
  std::string Hello(Connection& c);
  std::string TerminateClient(long server, long pid);
  int ServerIdOf(uid_t uid);
  void Drop(size_t index);
  void Cleanup();

  std::string pipe_dir_;
  std::string log_dir_;
  MpsDaemonInfo info_;
  int listen_fd_ = -1;
  int state_fd_ = -1;  // holds the liveness lock
  int log_fd_ = -1;
  bool quit_ = false;
  std::vector<Connection> connections_;
  std::map<uid_t, int> server_ids_;  // uid -> server id (daemon pid + n), stable for its life
};

}  // namespace simcuda::mps

#endif  // SIMCUDA_MPS_DAEMON_H_
