// Process-wide driver state and cuInit (see driver.h).
#include "driver.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "log.h"
#include "mps_client.h"
#include "sim_clock.h"

namespace simcuda {
namespace {

std::atomic<DriverState*> g_driver{nullptr};
std::mutex g_init_mu;
CUresult g_init_result = CUDA_SUCCESS;
bool g_init_tried = false;

CUuuid MakeUuid(const std::string& registry, uint64_t memory_bytes, int ordinal) {
  // The same in every process sharing the registry, and across runs: FNV-1a over the device's
  // identity, spread over 16 bytes.
  std::string key = registry + "/" + std::to_string(memory_bytes) + "/" + std::to_string(ordinal);
  uint64_t h1 = 1469598103934665603ull, h2 = 0x9e3779b97f4a7c15ull;
  for (unsigned char c : key) {
    h1 = (h1 ^ c) * 1099511628211ull;
    h2 = (h2 ^ c) * 0x100000001b3ull + 7;
  }
  CUuuid uuid{};
  std::memcpy(uuid.bytes, &h1, 8);
  std::memcpy(uuid.bytes + 8, &h2, 8);
  uuid.bytes[6] = static_cast<char>((uuid.bytes[6] & 0x0f) | 0x40);  // RFC 4122 version 4 layout
  uuid.bytes[8] = static_cast<char>((uuid.bytes[8] & 0x3f) | 0x80);
  return uuid;
}

}  // namespace

void StartCheckpointService();  // checkpoint_service.cc
void RemoveCheckpointSocket();  // checkpoint_service.cc

namespace {
// fork(): the child must not share its parent's registry slot or checkpoint socket. Only
// async-signal-safe work is allowed in the fork handler (and most children exec at once); the
// child's next cuInit re-attaches.
// The one thing done at once is closing the inherited registry descriptor (async-signal-safe),
// so that a killed parent's slot is freed while a child that never uses CUDA lives on.
std::atomic<bool> g_forked{false};
void AfterForkInChild() {
  g_forked.store(true);
  if (DriverState* d = g_driver.load(); d != nullptr && d->registry) d->registry->ForgetParentAfterFork();
  MpsForgetAfterFork();
}

// At normal exit the process's device memory goes back to the registry at once (a killed
// process's is reclaimed by the next process that attaches or runs short).
void DetachAtExit() {
  DriverState* d = g_driver.load();
  if (d != nullptr && d->registry) d->registry->Detach();
  RemoveCheckpointSocket();
}
}  // namespace

DriverState* Driver() { return g_driver.load(std::memory_order_acquire); }

CUresult InitDriver() {
  if (DriverState* d = Driver(); d != nullptr) {
    if (g_forked.exchange(false)) {
      d->registry->ReattachAfterFork();
      StartCheckpointService();
    }
    return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (g_init_tried) return g_init_result;
  g_init_tried = true;
  std::string error;
  std::optional<Config> config = LoadConfigFromEnvironment(&error);
  if (!config) {
    Log(LogLevel::kError, "bad configuration: %s", error.c_str());
    g_init_result = CUDA_ERROR_INVALID_VALUE;
    return g_init_result;
  }
  auto* state = new DriverState();  // never destroyed
  state->config = std::move(*config);
  SetTimeScale(state->config.time_scale);
  std::vector<uint64_t> capacities;
  for (size_t i = 0; i < state->config.devices.size(); ++i) {
    const DeviceSpec& spec = state->config.devices[i];
    capacities.push_back(spec.memory_bytes);
    state->devices.push_back({spec, CUuuid{}, 0x17 + static_cast<int>(i)});
  }
  state->registry = Registry::Open(state->config.registry_name, capacities, state->config.time_scale, &error,
                                   state->config.dir);
  if (!state->registry) {
    Log(LogLevel::kError, "%s", error.c_str());
    g_init_result = CUDA_ERROR_OPERATING_SYSTEM;
    return g_init_result;
  }
  // The time scale and devices of the processes already using the registry win.
  if (state->registry->time_scale() != state->config.time_scale) {
    Log(LogLevel::kWarn, "registry %s runs simulated time at scale %g, not %g: using %g",
        state->config.registry_name.c_str(), state->registry->time_scale(), state->config.time_scale,
        state->registry->time_scale());
    state->config.time_scale = state->registry->time_scale();
    SetTimeScale(state->config.time_scale);
  }
  size_t shared_count = static_cast<size_t>(state->registry->device_count());
  if (shared_count != state->devices.size()) {
    Log(LogLevel::kWarn, "registry %s has %zu devices, not %zu: using its devices",
        state->config.registry_name.c_str(), shared_count, state->devices.size());
  }
  while (state->devices.size() < shared_count) {
    DeviceSpec spec = state->devices.back().spec;
    int i = static_cast<int>(state->devices.size());
    state->devices.push_back({spec, CUuuid{}, 0x17 + i});
  }
  state->devices.resize(shared_count);
  for (size_t i = 0; i < shared_count; ++i) {
    DeviceInfo& info = state->devices[i];
    info.spec.memory_bytes = state->registry->Capacity(static_cast<int>(i));
    info.uuid = MakeUuid(state->config.registry_name, info.spec.memory_bytes, static_cast<int>(i));
  }
  state->primary.resize(state->devices.size());
  // An MPS client if a live simcuda-mps-control serves this registry (else time-sliced); it
  // then sees its daemon's devices. Else CUDA_VISIBLE_DEVICES chooses them.
  CUresult r = JoinMps(state);
  if (r == CUDA_SUCCESS && !state->registry->devices_remapped()) r = ApplyVisibleDevices(state);
  if (r != CUDA_SUCCESS) {
    state->registry->Detach();
    g_init_result = r;
    return r;
  }
  pthread_atfork(nullptr, nullptr, AfterForkInChild);
  std::atexit(DetachAtExit);
  g_driver.store(state, std::memory_order_release);
  StartCheckpointService();
  g_init_result = CUDA_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult ApplyVisibleDevices(DriverState* d) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) return CUDA_SUCCESS;
  // As NVIDIA's driver reads it: ordinals, in the order given, up to the first entry that is not
  // one (or repeats one); nothing valid leaves no device at all. UUIDs are not accepted.
  std::vector<int> visible;
  const std::string list(env);
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || static_cast<size_t>(v) >= d->devices.size() ||
        std::find(visible.begin(), visible.end(), static_cast<int>(v)) != visible.end()) {
      if (comma < list.size() || !item.empty())
        Log(LogLevel::kWarn, "CUDA_VISIBLE_DEVICES='%s': '%s' is not an ordinal of the %zu simulated "
            "devices: the list ends before it", env, item.c_str(), d->devices.size());
      break;
    }
    visible.push_back(static_cast<int>(v));
    at = comma + 1;
  }
  if (visible.empty()) {
    Log(LogLevel::kError, "CUDA_VISIBLE_DEVICES='%s' leaves no device", env);
    return CUDA_ERROR_NO_DEVICE;
  }
  std::vector<DeviceInfo> seen;
  std::string seen_as;
  for (size_t i = 0; i < visible.size(); ++i) {
    seen.push_back(d->devices[static_cast<size_t>(visible[i])]);
    seen_as += (i == 0 ? "" : ", ") + std::to_string(visible[i]) + " as " + std::to_string(i);
  }
  d->devices = std::move(seen);
  d->primary.resize(d->devices.size());
  d->registry->SetVisibleDevices(visible);
  Log(LogLevel::kInfo, "CUDA_VISIBLE_DEVICES: registry device %s", seen_as.c_str());
  return CUDA_SUCCESS;
}

CUresult CheckDevice(CUdevice dev) {
  DriverState* d = Driver();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || static_cast<size_t>(dev) >= d->devices.size()) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

}  // namespace simcuda
