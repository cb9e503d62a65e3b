// The node a fault-injection or soak test runs on: simcuda devices with a private registry, a
// real gshare-arbiter (tests/arbiter's ArbiterProcess) and function processes (fault_worker)
// under LD_PRELOAD=libgshare.so; plus the observations the tests make: the arbiter's event
// ring, the driver's device accounting across processes, and leftover shared-memory segments.
//
// Ownership: a FaultNode owns its temporary directory, its simcuda registry name (unlinked on
// destruction), the arbiter process, and the processes it spawned or tracks (killed and reaped
// on destruction if the test did not wait for them).
// Thread-safety: one thread per object.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gshare/shm/event_ring.h"
#include "test_util.h"

namespace gshare::fault {

using arbiter::testing::ArbiterProcess;
using arbiter::testing::TempDir;

// One function process (fault_worker run ...) and its files.
struct Worker {
  pid_t pid = -1;
  std::string name;
  std::string out;  // stdout: "ready", "turn=..." lines, the final JSON line
  std::string log;  // the shim's log (GSHARE_LOG_FILE)
};

struct WorkerSpec {
  std::string name;
  std::string quota = "128MiB";
  uint64_t seed = 1;
  int big_mib = 32;
  int budget_mib = 32;
  int turns = 10;
  int ops = 8;
  int idle_ms = 20;
  std::vector<std::string> extra_env;   // "K=V", after (overriding) the defaults
  std::vector<std::string> extra_args;  // more fault_worker flags, e.g. {"--seconds", "60"}
};

// Multiplier for the tests' waits (safety nets, never timed assertions) and for the arbiter's
// enforcement grace in slow builds: GSHARE_TEST_TIME_SCALE, which scripts/sanitize.sh sets
// (3 under ASan, 10 under TSan); 1 when unset or not a positive integer.
int TimeScale();

class FaultNode {
 public:
  // `devices`: SIMCUDA_DEVICES (e.g. "1x512MiB"); `link_gbps`: SIMCUDA_LINK_GBPS (0 = copies
  // are not slowed; 1 makes a 256 MiB swap take about a quarter of a second).
  FaultNode(const std::string& devices, const std::string& link_gbps,
            std::vector<std::string> arbiter_args);
  ~FaultNode();
  FaultNode(const FaultNode&) = delete;
  FaultNode& operator=(const FaultNode&) = delete;

  const TempDir& dir() const { return dir_; }
  ArbiterProcess& arbiter() { return arbiter_; }
  std::vector<std::string> SimcudaEnv() const;

  // Starts a function under the shim, registered with this node's arbiter.
  Worker Spawn(const WorkerSpec& spec);
  // Any other process of the test (raw clients, hogs): killed and reaped with the node if the
  // test ends early (a failed assertion). Returns `pid`.
  pid_t Track(pid_t pid);
  // Waits for it (safety timeout) and returns its final JSON report (null if none).
  nlohmann::json Finish(const Worker& w, std::chrono::seconds timeout, int* exit_code);
  // Everything a failing assertion should show about a worker.
  std::string Describe(const Worker& w) const;

  // Device bytes in use on device 0 as simcuda's registry accounts them for all processes
  // (a fresh process attaching first reclaims what dead processes held); nullopt on failure.
  std::optional<uint64_t> DeviceUsed();

  // The driver's process checkpoint state of `pid` (CU_PROCESS_STATE_*), nullopt on failure.
  std::optional<int> ProcessState(pid_t pid);

  // Polls the event ring of the arbiter's `start`-th run (from its oldest record) until `match`
  // accepts an event; the matching event, or nullopt after `timeout`.
  std::optional<shm::Event> WaitForEvent(int start,
                                         const std::function<bool(const shm::Event&)>& match,
                                         std::chrono::milliseconds timeout);
  // All events of the `start`-th run so far.
  std::vector<shm::Event> Events(int start);

  // The pid the arbiter recorded for client `client_id` (its register event), or -1.
  pid_t ClientPid(int start, uint32_t client_id);

  // Names in /dev/shm left by this node's processes: those containing this node's tag (other
  // than the simcuda registry, which the node removes itself) or one of `pids` as a number.
  // Every segment gshare makes is an anonymous memfd, so this is expected to be empty. Names
  // older than the node are skipped: pids are reused (pid_max is often 32768), so a stale file
  // of an earlier run can carry the number of one of this node's processes.
  std::vector<std::string> LeftoverShm(const std::vector<pid_t>& pids) const;
  const std::string& tag() const { return tag_; }

 private:
  TempDir dir_;
  std::vector<pid_t> children_;  // killed (if still running) and reaped on destruction
  std::string tag_;
  std::string registry_;
  std::filesystem::file_time_type created_;  // LeftoverShm ignores older names
  std::string devices_;
  std::string link_gbps_;
  ArbiterProcess arbiter_;
};

}  // namespace gshare::fault
