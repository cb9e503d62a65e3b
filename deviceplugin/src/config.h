// gshare-device-plugin's configuration: every key with its default, parsed from a TOML file
// ([device_plugin] table) and from command-line flags through one table of keys, so a key has
// one parser, one default and one help text (docs/kubernetes.md lists them).
// Thread-safety: plain values; built once at start-up, then read-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gshare/shm/status.h"

namespace gshare::deviceplugin {

// What Allocate returns for a container: the CDI device id (runtimes with CDI: containerd >= 1.7,
// CRI-O, kubelet >= 1.28 passing cdi_devices), the env and mounts the CDI spec would apply
// (runtimes without CDI), or both (the default; the mounts and env are the same, so a runtime
// that applies both gets the same container).
enum class DeviceListStrategy { kBoth, kCdi, kEnv };

struct PluginConfig {
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";
  std::string plugin_socket = "gshare.sock";  // a file name in the kubelet socket's directory
  std::string resource_name = "gshare.io/vgpu-memory";
  std::string control_socket;  // the arbiter's control socket; empty = the arbiter's default
  uint64_t unit_bytes = 256ull << 20;
  double overcommit = 1.0;
  std::chrono::milliseconds poll_interval{2000};
  std::chrono::milliseconds arbiter_timeout{2000};
  DeviceListStrategy strategy = DeviceListStrategy::kBoth;
  std::string cdi_device = "gshare.io/vgpu=vgpu";
  std::string cdi_spec = "/etc/cdi/gshare.json";
  std::string log_level = "info";

  // control_socket, or the arbiter's default control socket when it is empty.
  std::string control_socket_path() const;
  // The directory kubelet's socket is in, where the plugin's own socket goes.
  std::string socket_dir() const;
  std::string plugin_socket_path() const { return socket_dir() + "/" + plugin_socket; }
};

// Sets `key` (a TOML key, e.g. "unit") from its text form; an error names the key and what is
// wrong with the value. Unknown keys are errors.
shm::Status SetKey(PluginConfig& config, const std::string& key, const std::string& value);

// Reads a TOML file: keys in a [device_plugin] table. Errors name the file, line and key.
shm::Status LoadConfigFile(PluginConfig& config, const std::string& path);

// Checks what no single key can (none today but the socket path's length with its directory).
shm::Status Validate(const PluginConfig& config);

// The effective configuration as a TOML [device_plugin] table (every key, defaults included),
// which LoadConfigFile reads back to the same configuration.
std::string Describe(const PluginConfig& config);

struct KeyHelp {
  std::string key;
  std::string kind;
  std::string help;
};
// Every key, in a stable order (for --help and the docs test).
std::vector<KeyHelp> ConfigKeys();

const char* StrategyName(DeviceListStrategy s);

}  // namespace gshare::deviceplugin
