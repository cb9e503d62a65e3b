// Helpers shared by the shim_* tests: simcuda's environment for one test and the environment
// of an unmodified program running under LD_PRELOAD=libgshare.so with an arbiter socket.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.h"

namespace gshare::arbiter::testing {

// The shim tests' safety nets for a probe's next line and for its exit, scaled for sanitizer
// builds (TimeScale(): a program under TSan runs about ten times slower).
inline std::chrono::milliseconds LineWait() { return Scaled(std::chrono::seconds(60)); }
inline std::chrono::milliseconds ExitWait() { return Scaled(std::chrono::seconds(120)); }

// simcuda's environment for one test: its own device registry, removed when the test ends.
class Simcuda {
 public:
  explicit Simcuda(const std::string& tag, std::string devices = "1x1GiB")
      : registry_("/gshare-shim-arbiter-" + tag + "-" + std::to_string(::getpid())),
        devices_(std::move(devices)) {}
  ~Simcuda() { ::shm_unlink(registry_.c_str()); }
  std::vector<std::string> env() const {
    return {std::string("LD_LIBRARY_PATH=") + SIMCUDA_DIR, "SIMCUDA_DEVICES=" + devices_,
            "SIMCUDA_REGISTRY=" + registry_, std::string("SIMCUDA_KERNELS=") + SIMCUDA_KERNELS_LIB,
            "SIMCUDA_LINK_GBPS=0"};
  }

 private:
  std::string registry_;
  std::string devices_;
};

// The environment of a probe under the shim.
inline std::vector<std::string> ShimEnv(const Simcuda& simcuda, const std::string& socket,
                                        const std::string& quota, const std::string& name,
                                        const std::string& log_file) {
  std::vector<std::string> env = simcuda.env();
  env.push_back(std::string("LD_PRELOAD=") + PRELOAD_LIB);
  env.push_back("GSHARE_ARBITER_SOCKET=" + socket);
  env.push_back("GSHARE_VGPU_MEMORY=" + quota);
  env.push_back("GSHARE_FUNCTION=" + name);
  env.push_back("GSHARE_SLO_MS=50");
  env.push_back("GSHARE_LOG_LEVEL=info");
  env.push_back("GSHARE_LOG_FILE=" + log_file);
  return env;
}

// Co-running on simcuda (shim_corun_test.cc, shim_mps_pin_test.cc): the arbiter's flags that
// mark GPU 0 for co-running with its private simcuda-mps-control under <dir>/mps (the test makes
// that directory), and what makes a program under the shim an MPS client of that daemon at
// `share` percent (0: no CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in its environment, the shim asks the
// arbiter), or (`mps` false) points it at a pipe directory no daemon serves (it comes up
// without MPS: an ordinary vGPU).
#ifdef MPS_CONTROL_BIN
inline std::vector<std::string> CorunArbiterArgs(const TempDir& dir) {
  // simcuda's MPS contexts: 2 MiB per SM of the share, SMs rounded up (docs/simcuda.md).
  return {"--policy",
          "aggressive",
          "--slice",
          "5ms",
          "--corun-gpus",
          "0",
          "--mps-control",
          MPS_CONTROL_BIN,
          "--mps-dir",
          dir / "mps",
          "--mps-context-memory",
          "264MiB",
          "--mps-context-floor",
          "2MiB"};
}
#endif
inline void AddMpsEnv(std::vector<std::string>& env, const TempDir& dir, bool mps, int share) {
  env.push_back("CUDA_MPS_PIPE_DIRECTORY=" + (mps ? dir / "mps/gpu0/pipe" : dir / "no-daemon"));
  env.push_back("CUDA_MPS_LOG_DIRECTORY=" + dir.path());
  if (share > 0) env.push_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + std::to_string(share));
}
// Waits until that daemon serves (safety net, scaled): its status saying `running` is true from
// the spawn on, but simcuda's clients find it by the state file and control socket in its pipe
// directory, and a program started before they exist comes up without MPS (fail-open). (The
// ShimCorun fixture's ServingDaemon checks the same through the status's pipe_dir.)
inline bool MpsDaemonServes(const TempDir& dir) {
  const auto wait = Scaled(std::chrono::seconds(30));
  return WaitForFile(dir / "mps/gpu0/pipe/simcuda-mps", wait) &&
         WaitForFile(dir / "mps/gpu0/pipe/control", wait);
}

// Polls the file `path` until it contains `needle`; false after the (scaled) safety net. Not a
// measurement: only a bound on waiting for what must happen.
inline bool LogHas(const std::string& path, const std::string& needle) {
  const auto deadline = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(60));
  while (ReadFile(path).find(needle) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// "K=V" strings -> the map test::ChildProcess takes.
inline std::map<std::string, std::string> EnvMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const std::string& kv : env) out[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  return out;
}

}  // namespace gshare::arbiter::testing
