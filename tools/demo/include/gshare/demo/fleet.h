// A fleet of sample servers (one process per FunctionSpec), each started on a free port with
// its own environment, standard output and error in the log directory; Start returns once every
// server printed READY (or fails, stopping the ones it started). The Fleet owns the processes.
//
// Thread-safety: one thread per object.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "gshare/demo/child_process.h"
#include "gshare/demo/functions.h"
#include "gshare/workload/result.h"

namespace gshare::demo {

struct FleetOptions {
  std::string bin_dir;  // where sample-KIND are
  std::string log_dir;  // NAME.out / NAME.err
  // The environment of server i.
  std::function<std::vector<std::string>(size_t i, const FunctionSpec&)> env;
  // Extra flags of server i (e.g. --device).
  std::function<std::vector<std::string>(size_t i, const FunctionSpec&)> extra_args;
  std::chrono::seconds ready_timeout{300};
  const std::atomic<bool>* interrupted = nullptr;  // stop waiting when it becomes true
};

class Fleet {
 public:
  static workload::Result<Fleet> Start(const std::vector<FunctionSpec>& functions,
                                       const FleetOptions& options);

  const std::vector<int>& ports() const { return ports_; }
  // Names of servers that have exited (they should not have).
  std::vector<std::string> Exited();
  // SIGTERM to all, then waits up to `grace` for each (SIGKILL after). Returns the names of
  // servers that did not exit with status 0, with their status.
  std::vector<std::string> StopAll(std::chrono::milliseconds grace);

 private:
  std::vector<FunctionSpec> functions_;
  std::vector<ChildProcess> servers_;
  std::vector<int> ports_;
};

}  // namespace gshare::demo
