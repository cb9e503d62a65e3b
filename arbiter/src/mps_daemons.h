// MpsDaemons: one private MPS control daemon per co-run GPU (docs/arbiter.md, "Co-running"),
// started by the arbiter in the foreground (`<mps_control> -f`) with its own pipe and log
// directories (<mps_dir>/gpu<ordinal>/pipe and .../log) and CUDA_VISIBLE_DEVICES naming that
// GPU alone. It never changes the GPU's compute mode or the driver's time slice: a daemon
// reached through its own pipe directory serves only the processes started with
// CUDA_MPS_PIPE_DIRECTORY naming it. A daemon that exits is reaped and restarted after a
// back-off (1 s doubling to 30 s); until then its GPU forms no co-run sets. At shutdown each is
// sent `quit` through the control program's client mode and killed if it has not exited.
//
// Thread-safety: used on the arbiter's loop only. Start (at Init) and Stop (at shutdown) block
// briefly (spawning, waiting up to kStaleQuitWaitMs / wait_ms for a quit); OnExit and
// RestartDue, which run on the loop, do not wait: a restart only spawns.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu_ids.h"
#include "gshare/shm/status.h"
#include "gshare/shm/unique_fd.h"

namespace gshare::arbiter {

class MpsDaemons {
 public:
  struct Gpu {
    GpuIndex index;
    DeviceOrdinal ordinal;  // CUDA_VISIBLE_DEVICES of its daemon
  };
  static constexpr uint64_t kFirstBackoffNs = 1'000'000'000;
  static constexpr uint64_t kMaxBackoffNs = 30'000'000'000;
  static constexpr int kStaleQuitWaitMs = 3000;  // Start: a stale daemon's quit, at most

  MpsDaemons() = default;
  MpsDaemons(const MpsDaemons&) = delete;
  MpsDaemons& operator=(const MpsDaemons&) = delete;
  ~MpsDaemons() { Stop(); }

  // Creates each GPU's directories and starts its daemon. An error names the directory or the
  // program (a program that cannot be started is an error; one that starts and dies is
  // restarted later).
  shm::Status Start(const std::string& program, const std::string& root,
                    const std::vector<Gpu>& gpus);
  // The pidfd of GPU g's running daemon, -1 if none: the arbiter watches it.
  int pidfd(GpuIndex g) const;
  bool Running(GpuIndex g) const;
  // g's daemon's pidfd became readable: it exited. Reaps it (its status is logged) and
  // schedules its restart.
  void OnExit(GpuIndex g, uint64_t now_ns);
  // Restarts the daemons whose back-off is over; the GPUs started (new pidfds to watch).
  std::vector<GpuIndex> RestartDue(uint64_t now_ns);
  uint64_t NextRestartNs() const;  // UINT64_MAX: none due
  // CUDA_MPS_PIPE_DIRECTORY for the clients of GPU g ("" if g has no daemon).
  std::string PipeDir(GpuIndex g) const;

  // The control program's client mode for one GPU's daemon, as a value: the driver worker runs
  // its commands off the loop (each spawns the program and waits for it, bounded).
  // Thread-safety: a copy of plain strings; Run may be called on any thread.
  struct Control {
    std::string program, pipe_dir, log_dir;
    DeviceOrdinal ordinal;
    // Runs `command` (one line, e.g. "get_server_list") through the client mode; its output in
    // *out. An error names the command: the program could not start, did not finish within
    // wait_ms (it is killed), failed, or answered "ERROR...".
    shm::Status Run(const std::string& command, int wait_ms, std::string* out) const;
    // MPS's safe termination of one client process: finds the server serving `pid`
    // (get_server_list, get_client_list) and sends terminate_client. Afterwards that process's
    // CUDA work on the GPU fails; its co-runners are not affected. kInvalidArgument: no server
    // of this daemon serves it.
    shm::Status TerminateClient(pid_t pid, int wait_ms) const;
    // The pid of the server of this daemon that serves `pid` (get_server_list,
    // get_client_list), 0 when none does.
    shm::Result<long> ServerOf(pid_t pid, int wait_ms) const;
  };
  // GPU g's control (nullopt: the arbiter runs no daemon for g).
  std::optional<Control> ControlFor(GpuIndex g) const;
  bool HasDaemon(GpuIndex g) const { return Find(g) != nullptr; }
  // {"pid", "running", "pipe_dir", "restarts"} of g's daemon, or null if it has none.
  nlohmann::json Json(GpuIndex g) const;
  // Quits every daemon (its control program's `quit`), waiting up to `wait_ms` each, then kills
  // those still running. Idempotent.
  void Stop(int wait_ms = 3000);

 private:
  struct Daemon {
    Gpu gpu;
    std::string pipe_dir, log_dir;
    pid_t pid = 0;
    shm::UniqueFd pidfd;
    uint64_t restart_at_ns = 0;  // 0: not waiting to restart
    uint64_t backoff_ns = kFirstBackoffNs;
    uint32_t restarts = 0;
  };
  // `quit_stale`: first ask a daemon left on d's pipe directory to quit (Start only).
  shm::Status StartOne(Daemon& d, bool quit_stale);
  // Runs the control program's client mode with `quit` for d's directory (bounded by wait_ms);
  // true when it said a daemon was told to quit.
  bool SendQuit(const Daemon& d, int wait_ms) const;
  Daemon* Find(GpuIndex g);
  const Daemon* Find(GpuIndex g) const;

  std::string program_;
  std::vector<Daemon> daemons_;
};

}  // namespace gshare::arbiter
