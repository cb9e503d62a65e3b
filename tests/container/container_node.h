// A GPU node for the container tests: a real gshare-arbiter on the host over simulated GPUs,
// podman (with runc) running unmodified sample servers in containers with their own pid, ipc and
// mount namespaces, gshare injected through the spec gshare-cdi generates (gshare.io/vgpu=vgpu)
// and simcuda through a spec of its own (simcuda.gshare.io/gpu=all: libcuda.so.1 and the
// node-wide SIMCUDA_DIR, as NVIDIA's spec gives a container the driver and /dev/nvidia*).
// Images are a folder built from ldd of the programs (no registry). Everything the node starts
// is stopped and removed when it is destroyed; a runtime that cannot run fails the test with the
// reason (Ready()), never skips it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace gshare::container_test {

using arbiter::testing::TempDir;
using arbiter::testing::ToolResult;

struct NodeOptions {
  std::string devices = "1x1GiB";       // SIMCUDA_DEVICES
  std::string link_gbps = "0";          // SIMCUDA_LINK_GBPS (0: copies take no modelled time)
  std::vector<std::string> arbiter_args;  // besides the paths
  // The arbiter's own default socket paths (/run/gshare, /run/gshare-operator) instead of a
  // per-test directory: what a node gets without configuration. Refused if an arbiter runs there.
  bool default_layout = false;
};

class ContainerNode {
 public:
  explicit ContainerNode(NodeOptions options);
  ~ContainerNode();
  ContainerNode(const ContainerNode&) = delete;
  ContainerNode& operator=(const ContainerNode&) = delete;

  // "" when podman, the image, the specs and the arbiter are ready; else what is missing.
  const std::string& error() const { return error_; }

  // The tenant-facing directory (registration socket only) and the operator-only one.
  std::string tenant_dir() const { return options_.default_layout ? "/run/gshare" : dir_ / "tenant"; }
  std::string operator_dir() const { return options_.default_layout ? "/run/gshare-operator" : dir_ / "operator"; }
  std::string control_socket() const { return operator_dir() + "/control.sock"; }

  // Starts the arbiter (again, after StopArbiter); false with the log in error().
  bool StartArbiter();
  // SIGTERM; its JSON summary (null on failure).
  nlohmann::json StopArbiter();
  std::string ArbiterLog() const;

  // Starts sample-cnn in a container named `name` (a test-unique name is derived) serving on
  // `port` of the host's loopback, with the gshare device (vGPU `quota`, function `name`) or
  // without it. Returns the container's init's host pid (> 0) or -1 (reason in error()).
  enum class Gshare { kDevice, kNone, kSocketFileMount };
  // kSocketFileMount: the shim by hand, with a bind mount of the registration socket *file*
  // instead of the spec's directory (what the documentation warns against). `env`: "K=V" the
  // container's environment adds (its image's, as it were).
  pid_t StartSample(const std::string& name, int port, const std::string& quota, Gshare gshare = Gshare::kDevice,
                    const std::vector<std::string>& env = {});
  // Runs `argv` in a one-off container (the image's /bin/sh, ls, find, gshare-ctl) with the gshare
  // device; its exit code and output.
  ToolResult RunInContainer(const std::vector<std::string>& argv);
  // SIGKILL to a sample's container.
  void KillContainer(const std::string& name);
  // The container's output (the sample's and the shim's logs).
  std::string ContainerLog(const std::string& name);
  // The arbiter's log and every container's output, for a failure's message.
  std::string Logs();

  // gshare-ctl --json ARGS on the host; the parsed reply (null when not JSON).
  nlohmann::json Ctl(const std::vector<std::string>& args);
  // Polls gshare-ctl --json clients until `n` clients are registered (safety timeout).
  bool WaitForClients(size_t n, std::chrono::seconds timeout = std::chrono::seconds(60));
  // gshare-loadgen against the samples (name -> port), `rate` requests/s for `seconds`; exit 0
  // means every answer was correct.
  ToolResult Load(const std::vector<std::pair<std::string, int>>& targets, int rate, int seconds);

  const TempDir& dir() const { return dir_; }

 private:
  std::string Container(const std::string& name) const;
  ToolResult Podman(const std::vector<std::string>& args, std::chrono::seconds timeout = std::chrono::seconds(120));
  bool PreparePodman();
  bool PrepareImage();
  bool WriteSpecs();

  NodeOptions options_;
  TempDir dir_;
  std::string error_;
  std::string registry_;
  std::string rootfs_;
  std::string gshare_spec_, simcuda_spec_;
  pid_t arbiter_ = -1;
  int arbiter_starts_ = 0;
  std::vector<std::string> containers_;
  std::vector<std::string> made_dirs_;  // default-layout directories this node created
};

}  // namespace gshare::container_test
