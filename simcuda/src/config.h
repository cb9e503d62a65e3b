// simcuda's configuration: the simulated devices and the time model, read once from the
// environment (SIMCUDA_DEVICES or the TOML file named by SIMCUDA_CONFIG, SIMCUDA_LINK_GBPS,
// SIMCUDA_TIME_SCALE, SIMCUDA_REGISTRY, SIMCUDA_DIR). The syntax is documented in docs/simcuda.md.
#ifndef SIMCUDA_SRC_CONFIG_H_
#define SIMCUDA_SRC_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simcuda {

// One simulated GPU. Defaults describe an H100-like device with a host link slowed to what
// this kind of machine can copy (see DESIGN.md "Facts measured").
struct DeviceSpec {
  std::string name = "simcuda H100-like";
  uint64_t memory_bytes = 80ull << 30;
  double flops = 60e12;                 // FLOP/s
  double memory_bytes_per_s = 3.35e12;  // device memory bandwidth (kernels, DtoD copies, memset)
  double link_bytes_per_s = 4e9;        // host<->device link; 0 = unlimited (no modelled time)
  double launch_overhead_ns = 5000;     // added to every kernel's simulated duration
  int sm_count = 132;
  int cc_major = 9;
  int cc_minor = 0;
  int clock_khz = 1980000;
};

struct Config {
  std::vector<DeviceSpec> devices;
  // Real seconds per simulated second: 0.1 makes simulated time pass 10x faster than real time.
  double time_scale = 1.0;
  // Name of the shared-memory device registry ("/simcuda-..."); derived when not configured.
  std::string registry_name;
  // SIMCUDA_DIR (TOML `dir`): the node-wide directory of the registry file and of every
  // process's checkpoint socket, an absolute path. The simulated GPUs are those of the processes
  // that see the same directory: a container with a private /dev/shm gets the node's by
  // mounting a directory named here (docs/simcuda.md, "Containers").
  std::string dir = kDefaultDir;
  static constexpr const char* kDefaultDir = "/dev/shm";
  // SIMCUDA_POPULATE=1: device memory is populated when allocated/mapped (as physical GPU memory
  // is), so first touches inside timed copies do not page-fault. Off by default: simulated
  // devices may be larger than the host's memory.
  bool populate = false;
  // SIMCUDA_CHECKPOINT_REPLY_MS: how long a process checkpoint call that does no work in the
  // target (GetState, GetRestoreThreadId, Unlock) waits for its answer (api_checkpoint.cc).
  int64_t checkpoint_reply_ms = 1000;
  // MPS mode (docs/simcuda.md "MPS mode"). The first two are the daemon's (simcuda-mps-control
  // publishes them to its clients); the step is each client's.
  // SIMCUDA_MPS_MAX_CLIENTS / mps_max_clients: client contexts per GPU (1..64; NVIDIA: 48).
  int mps_max_clients = 48;
  // SIMCUDA_MPS_CONTEXT_MIB_PER_SM / mps_context_mib_per_sm: a client context's device memory
  // per SM of its share (NVIDIA: about 2 MB per SM at 100%).
  double mps_context_mib_per_sm = 2.0;
  // SIMCUDA_MPS_STEP_US / mps_step_us: simulated microseconds between two re-computations of a
  // co-running kernel's rate.
  double mps_step_us = 500;
};

// Parses a SIMCUDA_DEVICES value: comma-separated device groups "[N x]SIZE[:key=value]...",
// e.g. "2x16GiB", "16GiB,8GiB", "80GiB:tflops=60:mem_gbps=3350:link_gbps=4:name=A".
std::optional<std::vector<DeviceSpec>> ParseDeviceList(std::string_view text, std::string* error);

// Parses a TOML configuration (the contents of the SIMCUDA_CONFIG file) into `config`.
bool ParseTomlConfig(std::string_view toml_text, Config* config, std::string* error);

// Builds the configuration from the environment. On a malformed value returns nullopt and the
// reason in `error`.
std::optional<Config> LoadConfigFromEnvironment(std::string* error);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_CONFIG_H_
