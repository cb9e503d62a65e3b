// The configuration keys of gshare-device-plugin (config.h): one table, each key with its parser,
// kind and help text.
#include "config.h"

#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include <toml++/toml.h>

#include "gshare/arbiter/control_client.h"
#include "gshare/common/units.h"

namespace gshare::deviceplugin {
namespace {

// A setter's error is the value's problem, without the key (SetKey adds it).
using Setter = std::function<shm::Status(PluginConfig&, const std::string&)>;
using Getter = std::function<std::string(const PluginConfig&)>;

struct Key {
  Setter set;
  Getter get;
  const char* kind;
  const char* help;
};

std::string Ms(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + "ms"; }

shm::Status Invalid(std::string message) {
  return shm::Status(shm::StatusCode::kInvalidArgument, std::move(message));
}

shm::Status SetPath(std::string& out, const std::string& v) {
  if (v.empty()) return Invalid("must not be empty");
  if (v.size() >= 108) return Invalid("path longer than a Unix socket allows (107 bytes)");
  out = v;
  return {};
}

shm::Status SetMs(std::chrono::milliseconds& out, const std::string& v, int64_t min_ms,
                  int64_t max_ms) {
  const auto d = ParseDuration(v);
  if (!d.ok()) return Invalid("'" + v + "': " + d.status().message());
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  if (ms.count() < min_ms || ms.count() > max_ms)
    return Invalid("'" + v + "' is out of range (" + std::to_string(min_ms) + " ms to " +
                   std::to_string(max_ms) + " ms)");
  out = ms;
  return {};
}

// An extended resource name as kubelet accepts one: DOMAIN/NAME, the domain not kubernetes.io.
shm::Status CheckResourceName(const std::string& v) {
  const auto slash = v.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == v.size() ||
      v.find('/', slash + 1) != std::string::npos)
    return Invalid("'" + v + "' is not DOMAIN/NAME (e.g. gshare.io/vgpu-memory)");
  const std::string domain = v.substr(0, slash);
  if (domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"))
    return Invalid("'" + v +
                   "': the kubernetes.io domain is reserved for Kubernetes' own resources");
  for (char c : v)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
          c == '/'))
      return Invalid("'" + v + "' has a character outside [A-Za-z0-9._-/]");
  if (v.size() - slash - 1 > 63)
    return Invalid("'" + v + "': the name after '/' is longer than 63");
  return {};
}

const std::map<std::string, Key>& Keys() {
  static const auto* keys = new std::map<std::string, Key>{
      {"kubelet_socket",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          if (v.empty() || v.front() != '/') return Invalid("'" + v + "' is not an absolute path");
          return SetPath(c.kubelet_socket, v);
        },
        [](const PluginConfig& c) { return c.kubelet_socket; },
        "PATH",
        "kubelet's registration socket; the plugin's socket goes in its directory (default "
        "/var/lib/kubelet/device-plugins/kubelet.sock)"}},
      {"plugin_socket",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          if (v.empty() || v.find('/') != std::string::npos || v == "." || v == "..")
            return Invalid("'" + v +
                           "' must be a file name (no '/'): it goes in kubelet's socket directory");
          if (v == "kubelet.sock") return Invalid("'kubelet.sock' is kubelet's own socket");
          c.plugin_socket = v;
          return {};
        },
        [](const PluginConfig& c) { return c.plugin_socket; },
        "NAME", "the plugin's socket, a file name in kubelet's socket directory (default gshare.sock)"}},
      {"resource_name",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          if (auto s = CheckResourceName(v); !s.ok()) return s;
          c.resource_name = v;
          return {};
        },
        [](const PluginConfig& c) { return c.resource_name; },
        "NAME", "the extended resource advertised, in units (default gshare.io/vgpu-memory)"}},
      {"control_socket",
       {[](PluginConfig& c, const std::string& v) { return SetPath(c.control_socket, v); },
        [](const PluginConfig& c) { return c.control_socket_path(); },
        "PATH",
        "the arbiter's control socket, read for the GPUs' memory and state (default the "
        "arbiter's default)"}},
      {"unit",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          const auto b = ParseByteSize(v);
          if (!b.ok()) return Invalid("'" + v + "': " + b.status().message());
          if (*b < (1ull << 20) || *b % (1ull << 20) != 0)
            return Invalid("'" + v + "' must be a whole number of MiB, at least 1MiB");
          if (*b > (1ull << 40)) return Invalid("'" + v + "' is larger than 1TiB");
          c.unit_bytes = *b;
          return {};
        },
        [](const PluginConfig& c) { return std::to_string(c.unit_bytes >> 20) + "MiB"; },
        "SIZE", "vGPU memory per unit of the resource: a pod asking for N units gets N x unit (default 256MiB)"}},
      {"overcommit",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          std::istringstream in(v);
          double f = 0;
          if (!(in >> f) || !in.eof() || !std::isfinite(f))
            return Invalid("'" + v + "' is not a number");
          if (f < 1.0 || f > 64.0) return Invalid("'" + v + "' is out of range (1 to 64)");
          c.overcommit = f;
          return {};
        },
        [](const PluginConfig& c) { std::ostringstream os; os << c.overcommit; return os.str(); },
        "FACTOR",
        "units advertised per GPU = usable memory x FACTOR / unit: vGPUs that are idle are "
        "swapped to host memory, so more can be promised than fits at once (default 1)"}},
      {"poll_interval",
       {[](PluginConfig& c, const std::string& v) { return SetMs(c.poll_interval, v, 10, 600000); },
        [](const PluginConfig& c) { return Ms(c.poll_interval); },
        "DURATION", "how often the arbiter's state is read (default 2s)"}},
      {"arbiter_timeout",
       {[](PluginConfig& c, const std::string& v) { return SetMs(c.arbiter_timeout, v, 10, 60000); },
        [](const PluginConfig& c) { return Ms(c.arbiter_timeout); },
        "DURATION", "how long one control request may take before the arbiter counts as unreachable (default 2s)"}},
      {"device_list_strategy",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          if (v == "both") c.strategy = DeviceListStrategy::kBoth;
          else if (v == "cdi") c.strategy = DeviceListStrategy::kCdi;
          else if (v == "env") c.strategy = DeviceListStrategy::kEnv;
          else return Invalid("'" + v + "' is not one of both, cdi, env");
          return {};
        },
        [](const PluginConfig& c) { return std::string(StrategyName(c.strategy)); },
        "both|cdi|env",
        "what Allocate returns: the CDI device id, the CDI spec's env and mounts, or both (default both)"}},
      {"cdi_device",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          const auto eq = v.find('=');
          const auto slash = v.find('/');
          if (eq == std::string::npos || slash == std::string::npos || slash > eq ||
              eq + 1 == v.size())
            return Invalid("'" + v + "' is not a CDI device id (vendor.com/class=name)");
          c.cdi_device = v;
          return {};
        },
        [](const PluginConfig& c) { return c.cdi_device; },
        "ID", "the CDI device that injects the shim (default gshare.io/vgpu=vgpu, what gshare-cdi generate writes)"}},
      {"cdi_spec",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          if (v.empty() || v.front() != '/') return Invalid("'" + v + "' is not an absolute path");
          c.cdi_spec = v;
          return {};
        },
        [](const PluginConfig& c) { return c.cdi_spec; },
        "FILE",
        "the node's CDI spec (JSON), whose env and mounts are returned to runtimes without CDI "
        "(default /etc/cdi/gshare.json)"}},
      {"log_level",
       {[](PluginConfig& c, const std::string& v) -> shm::Status {
          static const char* levels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
          for (const char* l : levels)
            if (v == l) {
              c.log_level = v;
              return {};
            }
          return Invalid("'" + v +
                         "' is not one of trace, debug, info, warn, error, critical, off");
        },
        [](const PluginConfig& c) { return c.log_level; },
        "LEVEL", "spdlog level (default info)"}},
  };
  return *keys;
}

std::optional<std::string> TomlValueText(const toml::node& node) {
  if (node.is_string()) return *node.value<std::string>();
  if (node.is_integer()) return std::to_string(*node.value<int64_t>());
  if (node.is_floating_point()) {
    std::ostringstream os;
    os << *node.value<double>();
    return os.str();
  }
  return std::nullopt;
}

}  // namespace

std::string PluginConfig::control_socket_path() const {
  return control_socket.empty() ? std::string(arbiter::kDefaultControlSocket) : control_socket;
}

std::string PluginConfig::socket_dir() const {
  const auto slash = kubelet_socket.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : kubelet_socket.substr(0, slash);
}

shm::Status SetKey(PluginConfig& config, const std::string& key, const std::string& value) {
  const auto it = Keys().find(key);
  if (it == Keys().end())
    return shm::Status(shm::StatusCode::kInvalidArgument, "unknown key '" + key + "'");
  if (auto s = it->second.set(config, value); !s.ok())
    return shm::Status(s.code(), key + ": " + s.message());
  return {};
}

shm::Status LoadConfigFile(PluginConfig& config, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << path << ": " << e.description() << " (line " << e.source().begin.line << ")";
    return shm::Status(shm::StatusCode::kInvalidArgument, os.str());
  }
  for (const auto& [name, node] : root) {
    if (name.str() != "device_plugin" || !node.is_table())
      return shm::Status(shm::StatusCode::kInvalidArgument,
                         path + ": line " + std::to_string(node.source().begin.line) + ": '" +
                             std::string(name.str()) +
                             "' outside the [device_plugin] table (every key goes there)");
  }
  const auto* table = root.get_as<toml::table>("device_plugin");
  if (table == nullptr) return {};
  for (const auto& [name, node] : *table) {
    const std::string key(name.str());
    const std::string where = path + ": line " + std::to_string(node.source().begin.line) + ": ";
    const auto text = TomlValueText(node);
    if (!text)
      return shm::Status(shm::StatusCode::kInvalidArgument,
                         where + key + ": expected a string or a number");
    if (auto s = SetKey(config, key, *text); !s.ok())
      return shm::Status(shm::StatusCode::kInvalidArgument, where + s.message());
  }
  return {};
}

shm::Status Validate(const PluginConfig& config) {
  if (config.plugin_socket_path().size() >= 108)
    return shm::Status(shm::StatusCode::kInvalidArgument,
                       "plugin socket " + config.plugin_socket_path() +
                           " is longer than a Unix socket allows (107 bytes)");
  return {};
}

std::string Describe(const PluginConfig& config) {
  std::string out = "[device_plugin]\n";
  for (const auto& [key, k] : Keys()) out += key + " = \"" + k.get(config) + "\"\n";
  return out;
}

std::vector<KeyHelp> ConfigKeys() {
  std::vector<KeyHelp> out;
  for (const auto& [key, k] : Keys()) out.push_back({key, k.kind, k.help});
  return out;
}

const char* StrategyName(DeviceListStrategy s) {
  switch (s) {
    case DeviceListStrategy::kBoth: return "both";
    case DeviceListStrategy::kCdi: return "cdi";
    case DeviceListStrategy::kEnv: return "env";
  }
  return "?";
}

}  // namespace gshare::deviceplugin
