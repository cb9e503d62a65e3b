// Parsing of the arbiter's configuration: TOML file (toml++) then command line (CLI11).
// Every value goes through one setter per key so the file and the flags validate identically
// and every error names the key (file) or the flag (command line).
#include "gshare/arbiter/config.h"

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "gshare/common/units.h"
#include "gshare/shm/wire.h"

namespace gshare::arbiter {
namespace {

// Sets one key from its textual value; returns an error message without the key's name.
using Setter = std::function<std::string(ArbiterConfig&, const std::string&)>;

std::string SetDuration(std::chrono::nanoseconds& out, const std::string& v, bool allow_zero) {
  std::string err;
  auto d = ParseDuration(v, &err);
  if (!d) return err;
  if (!allow_zero && d->count() == 0) return "must be greater than zero";
  if (*d > std::chrono::hours(24)) return "must be at most 24h";
  out = *d;
  return {};
}

std::string SetUnsigned(uint64_t& out, const std::string& v, uint64_t min, uint64_t max) {
  uint64_t x = 0;
  const auto* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, x);
  if (ec != std::errc() || p != end || v.empty()) return "'" + v + "' is not a non-negative integer";
  if (x < min || x > max)
    return "must be between " + std::to_string(min) + " and " + std::to_string(max);
  out = x;
  return {};
}

// A comma-separated list of distinct integers in [0, max]; `what` names one item in errors.
std::string SetList(std::vector<uint32_t>& out, const std::string& v, uint64_t max,
                    const std::string& what) {
  std::vector<uint32_t> items;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    uint64_t x = 0;
    if (auto e = SetUnsigned(x, item, 0, max); !e.empty()) return what + " " + e;
    for (uint32_t seen : items)
      if (seen == x) return what + " " + item + " listed twice";
    items.push_back(static_cast<uint32_t>(x));
  }
  if (items.empty() && !v.empty()) return "expected a comma-separated list of " + what + "s";
  out = std::move(items);
  return {};
}

std::string SetGpuList(std::vector<uint32_t>& out, const std::string& v) {
  return SetList(out, v, shm::kMaxGpus - 1, "GPU ordinal");
}

std::string SetIdList(std::vector<uint32_t>& out, const std::string& v) {
  return SetList(out, v, 0xFFFFFFFEULL, "id");
}

std::string SetMode(mode_t& out, const std::string& v) {
  unsigned mode = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), mode, 8);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || mode > 0777)
    return "'" + v + "' is not an octal permission mode such as 0666";
  out = static_cast<mode_t>(mode);
  return {};
}

// Every key: its setter, the kind of value (--help's placeholder) and its --help text with the
// default (kept next to the setter so that no key is added without help; docs/operating.md has
// the same table).
struct Key {
  Setter set;
  const char* kind;
  const char* help;
};

const std::map<std::string, Key>& Keys() {
  static const auto* keys = new std::map<std::string, Key>{
      {"socket",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           if (v.empty()) return "must not be empty";
           if (v.size() >= 108) return "path longer than a Unix socket allows (107 bytes)";
           c.socket_path = v;
           return {};
         },
        "PATH",
        "registration socket; its directory must exist (default /run/gshare/arbiter.sock)"}},
      {"socket_mode",
       {[](ArbiterConfig& c, const std::string& v) { return SetMode(c.socket_mode, v); },
        "MODE", "permissions of the registration socket file, octal (default 0666)"}},
      {"control_socket",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           if (v.size() >= 108) return "path longer than a Unix socket allows (107 bytes)";
           c.control_socket = v;
           return {};
         },
        "PATH",
        "control socket for gshare-ctl and gshare-top; 'off' disables it (default: control.sock "
        "next to the registration socket)"}},
      {"control_socket_mode",
       {[](ArbiterConfig& c, const std::string& v) { return SetMode(c.control_socket_mode, v); },
        "MODE",
        "permissions of the control socket file; access is decided by uid and groups (default "
        "0666)"}},
      {"control_read_uids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.control_read_uids, v); },
        "IDS",
        "uids that may use the read-only control commands, besides root and the arbiter's uid "
        "(default none)"}},
      {"control_read_gids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.control_read_gids, v); },
        "IDS", "gids that may use the read-only control commands (default none)"}},
      {"control_admin_uids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.control_admin_uids, v); },
        "IDS", "uids that may also drain, undrain, evict and set-slo (default none)"}},
      {"control_admin_gids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.control_admin_gids, v); },
        "IDS", "gids that may also drain, undrain, evict and set-slo (default none)"}},
      {"gpus",
       {[](ArbiterConfig& c, const std::string& v) { return SetGpuList(c.gpus, v); },
        "IDS", "GPU ordinals to manage (default: every visible GPU)"}},
      {"allowed_uids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.allowed_uids, v); },
        "IDS", "uids allowed to register (default: anyone who can connect)"}},
      {"allowed_gids",
       {[](ArbiterConfig& c, const std::string& v) { return SetIdList(c.allowed_gids, v); },
        "IDS",
        "gids allowed to register, primary or supplementary (default: anyone who can connect)"}},
      {"gpu_memory",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           std::string err;
           auto b = ParseByteSize(v, &err);
           if (!b) return err;
           if (*b < (1u << 20) || *b > shm::kMaxQuotaBytes) return "must be between 1MiB and 16TiB";
           c.gpu_memory_bytes = *b;
           return {};
         },
        "SIZE",
        "memory of each GPU; set it to run without asking the driver (default: from the driver)"}},
      {"gpu_count",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           uint64_t n = 0;
           if (auto e = SetUnsigned(n, v, 1, shm::kMaxGpus); !e.empty()) return e;
           c.gpu_count = static_cast<uint32_t>(n);
           return {};
         },
        "N", "GPUs assumed when --gpu-memory is set (default 1)"}},
      {"memory_reserve",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           std::string err;
           auto b = ParseByteSize(v, &err);
           if (!b) return err;
           c.memory_reserve_bytes = *b;
           return {};
         },
        "SIZE", "memory kept free on every GPU (default 0)"}},
      {"slice",
       {[](ArbiterConfig& c, const std::string& v) { return SetDuration(c.slice, v, false); },
        "DURATION", "time slice; a holder yields at its end when someone waits (default 20ms)"}},
      {"idle_release",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.idle_release, v, false);
         },
        "DURATION",
        "the arbiter's idle threshold; clients use GSHARE_IDLE_RELEASE_US (default 300us)"}},
      {"preempt_grace",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.preempt_grace, v, false);
         },
        "DURATION",
        "after a preemption, how long a holder may take before it is locked and checkpointed "
        "(default 200ms)"}},
      {"swap_order_timeout",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.swap_order_timeout, v, false);
         },
        "DURATION",
        "a swap order whose client shows no progress this long (first window: plus its quota "
        "at 128 MiB/s) disconnects it (default 10s)"}},
      {"lease",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           if (v != "on" && v != "off") return "'" + v + "' is neither 'on' nor 'off'";
           c.lease = v == "on";
           return {};
         },
        "on|off",
        "offer a sole tenant its next grant in advance, taken without a round trip (default on)"}},
      {"deep_evict_after",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.deep_evict_after, v, true);
         },
        "DURATION", "checkpoint vGPUs idle this long; 0 = never (default 0)"}},
      {"policy",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           if (v.empty()) return "must name a policy";
           c.policy = v;  // checked against the policy factory when the arbiter starts
           return {};
         },
        "NAME",
        "scheduling policy: aggressive, dual-queue, fifo, keepalive, proxy-swap, "
        "aggressive-no-<idea> (default aggressive)"}},
      {"metrics",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           if (!v.empty()) {
             const auto colon = v.rfind(':');
             uint64_t port = 0;
             if (colon == std::string::npos || colon == 0 ||
                 !SetUnsigned(port, v.substr(colon + 1), 1, 65535).empty())
               return "'" + v + "' is not HOST:PORT (port 1-65535)";
           }
           c.metrics_address = v;
           return {};
         },
        "HOST:PORT", "serve Prometheus text at http://HOST:PORT/metrics (default off)"}},
      {"fail_mode",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           if (v == "open") {
             c.fail_mode = FailMode::kOpen;
           } else if (v == "closed") {
             c.fail_mode = FailMode::kClosed;
           } else {
             return "'" + v + "' is neither 'open' nor 'closed'";
           }
           return {};
         },
        "open|closed",
        "what clients do while the arbiter is away, announced at registration (default open)"}},
      {"event_ring",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           c.event_ring_path = v;
           return {};
         },
        "PATH", "file of the node event ring, for gshare-trace (default none)"}},
      {"event_ring_capacity",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           uint64_t n = 0;
           if (auto e = SetUnsigned(n, v, 16, uint64_t{1} << 24); !e.empty()) return e;
           if ((n & (n - 1)) != 0) return "must be a power of two";
           c.event_ring_capacity = n;
           return {};
         },
        "N", "records in the event ring, a power of two (default 65536)"}},
      {"doorbell_rate",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetUnsigned(c.doorbell_rate, v, 0, 100'000'000);
         },
        "N", "wake-ups per second one client's doorbell may cause; 0 = unlimited (default 10000)"}},
      {"doorbell_flood_disconnect",
       {[](ArbiterConfig& c, const std::string& v) {
           return SetDuration(c.doorbell_flood_disconnect, v, true);
         },
        "DURATION",
        "disconnect a client that stays over --doorbell-rate this long; 0 = never (default 10s)"}},
      {"max_clients",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           uint64_t n = 0;
           if (auto e = SetUnsigned(n, v, 1, 1u << 20); !e.empty()) return e;
           c.max_clients = static_cast<uint32_t>(n);
           return {};
         },
        "N", "registrations are refused beyond this many clients (default 4096)"}},
      {"libcuda",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           if (v.empty()) return "must not be empty";
           c.libcuda = v;
           return {};
         },
        "PATH",
        "driver library dlopened for GPU discovery and enforcement (default libcuda.so.1)"}},
      {"log_level",
       {[](ArbiterConfig& c, const std::string& v) -> std::string {
           static const char* const kLevels[] = {"trace", "debug", "info", "warn",
                                                 "error", "critical", "off"};
           for (const char* l : kLevels)
             if (v == l) {
               c.log_level = v;
               return {};
             }
           return "'" + v + "' is not one of trace, debug, info, warn, error, critical, off";
         },
        "LEVEL", "trace, debug, info, warn, error, critical or off (default info)"}},
  };
  return *keys;
}

// A TOML value as the text a setter takes; lists of integers become "0,1".
std::optional<std::string> TomlText(const toml::node& node) {
  if (auto s = node.value<std::string>(); s && node.is_string()) return *s;
  if (node.is_integer()) return std::to_string(*node.value<int64_t>());
  if (node.is_boolean()) return *node.value<bool>() ? "true" : "false";
  if (const auto* arr = node.as_array()) {
    std::string out;
    for (const auto& el : *arr) {
      if (!el.is_integer()) return std::nullopt;
      if (!out.empty()) out += ',';
      out += std::to_string(*el.value<int64_t>());
    }
    return out;
  }
  return std::nullopt;
}

std::string FlagName(const std::string& key) {
  std::string flag = "--" + key;
  for (char& ch : flag)
    if (ch == '_') ch = '-';
  return flag;
}

}  // namespace

std::string ControlSocketPath(const ArbiterConfig& config) {
  if (config.control_socket == "off") return {};
  if (!config.control_socket.empty()) return config.control_socket;
  const auto slash = config.socket_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : config.socket_path.substr(0, slash);
  return (dir.empty() ? std::string("/") : dir + "/") + "control.sock";
}

const char* FailModeName(FailMode mode) { return mode == FailMode::kOpen ? "open" : "closed"; }

ConfigResult ParseConfigToml(std::string_view text, const ArbiterConfig& base) {
  ConfigResult result{base, {}, false};
  toml::table root;
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << "config file: " << e.description() << " (line " << e.source().begin.line << ")";
    result.error = os.str();
    return result;
  }
  // An [arbiter] table is accepted as well as top-level keys.
  const toml::table* table = &root;
  if (const auto* sub = root["arbiter"].as_table()) table = sub;
  for (const auto& [key, node] : *table) {
    const std::string name(key.str());
    if (table == &root && name == "arbiter") continue;
    const auto it = Keys().find(name);
    if (it == Keys().end()) {
      result.error = "config key '" + name + "': unknown key";
      return result;
    }
    const auto text_value = TomlText(node);
    if (!text_value) {
      result.error = "config key '" + name + "': unsupported value type";
      return result;
    }
    if (auto err = it->second.set(result.config, *text_value); !err.empty()) {
      result.error = "config key '" + name + "': " + err;
      return result;
    }
  }
  return result;
}

ConfigResult ParseCommandLine(int argc, const char* const* argv) {
  ConfigResult result;
  CLI::App app{"gshare-arbiter: the node daemon that lets GPU functions share a node's GPUs"};
  std::string config_file;
  app.add_option("--config", config_file, "TOML config file (keys as the long flags, '_' for '-')")
      ->type_name("FILE");
  std::map<std::string, std::string> values;
  for (const auto& [key, k] : Keys())
    app.add_option(FlagName(key), values[key], k.help)->type_name(k.kind);
  app.add_option("--summary", result.config.summary_path, "write a JSON summary here on exit")
      ->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    result.help = true;
    result.error = app.help();
    return result;
  } catch (const CLI::ParseError& e) {
    result.error = std::string("command line: ") + e.what();
    return result;
  }
  const std::string summary = result.config.summary_path;
  if (!config_file.empty()) {
    std::ifstream in(config_file);
    if (!in) {
      result.error = "--config: cannot read '" + config_file + "'";
      return result;
    }
    std::stringstream buf;
    buf << in.rdbuf();
    ConfigResult file = ParseConfigToml(buf.str(), result.config);
    if (!file.ok()) {
      result.error = file.error + " in " + config_file;
      return result;
    }
    result.config = file.config;
    result.config.summary_path = summary;
  }
  for (const auto& [key, k] : Keys()) {
    if (app.count(FlagName(key)) == 0) continue;
    if (auto err = k.set(result.config, values[key]); !err.empty()) {
      result.error = FlagName(key) + ": " + err;
      return result;
    }
  }
  return result;
}

}  // namespace gshare::arbiter
