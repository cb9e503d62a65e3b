// Parsing of simcuda's configuration from the environment and TOML (see config.h).
#include "config.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "gshare/common/units.h"

namespace simcuda {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

std::optional<double> ParseNumber(std::string_view s) {
  std::string copy(Trim(s));
  if (copy.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end == copy.c_str() || *end != '\0' || v < 0) return std::nullopt;
  return v;
}

// Applies one "key=value" device attribute.
bool ApplyAttribute(std::string_view key, std::string_view value, DeviceSpec* d, std::string* error) {
  if (key == "name") {
    d->name = std::string(value);
    return true;
  }
  std::optional<double> v = ParseNumber(value);
  if (!v) {
    *error = "bad number '" + std::string(value) + "' for " + std::string(key);
    return false;
  }
  if (key == "tflops") d->flops = *v * 1e12;
  else if (key == "mem_gbps") d->memory_bytes_per_s = *v * 1e9;
  else if (key == "link_gbps") d->link_bytes_per_s = *v * 1e9;
  else if (key == "launch_us") d->launch_overhead_ns = *v * 1e3;
  else if (key == "sms") d->sm_count = static_cast<int>(*v);
  else if (key == "cc") {
    d->cc_major = static_cast<int>(*v);
    d->cc_minor = static_cast<int>((*v - d->cc_major) * 10 + 0.5);
  } else {
    *error = "unknown device attribute '" + std::string(key) + "'";
    return false;
  }
  return true;
}

bool ParseSize(std::string_view text, uint64_t* out, std::string* error) {
  const gshare::Result<uint64_t> size = gshare::ParseByteSize(Trim(text));
  if (!size.ok() || *size == 0) {
    *error = "bad device memory size '" + std::string(text) + "'" +
             (size.ok() ? "" : ": " + size.status().message());
    return false;
  }
  *out = *size;
  return true;
}

}  // namespace

std::optional<std::vector<DeviceSpec>> ParseDeviceList(std::string_view text, std::string* error) {
  std::vector<DeviceSpec> devices;
  for (std::string_view group : Split(text, ',')) {
    group = Trim(group);
    if (group.empty()) continue;
    std::vector<std::string_view> fields = Split(group, ':');
    std::string_view head = Trim(fields[0]);
    unsigned count = 1;
    size_t x = head.find_first_of("xX");
    if (x != std::string_view::npos && x > 0 && head.find_first_not_of("0123456789") == x) {
      std::from_chars(head.data(), head.data() + x, count);
      head.remove_prefix(x + 1);
    }
    DeviceSpec spec;
    if (!ParseSize(head, &spec.memory_bytes, error)) return std::nullopt;
    for (size_t i = 1; i < fields.size(); ++i) {
      std::string_view kv = Trim(fields[i]);
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos) {
        *error = "device attribute '" + std::string(kv) + "' is not key=value";
        return std::nullopt;
      }
      if (!ApplyAttribute(Trim(kv.substr(0, eq)), Trim(kv.substr(eq + 1)), &spec, error)) return std::nullopt;
    }
    if (count == 0 || count > 16) {
      *error = "device count must be 1..16";
      return std::nullopt;
    }
    for (unsigned i = 0; i < count; ++i) devices.push_back(spec);
  }
  if (devices.empty() || devices.size() > 16) {
    *error = "SIMCUDA_DEVICES must name 1..16 devices";
    return std::nullopt;
  }
  return devices;
}

bool ParseTomlConfig(std::string_view toml_text, Config* config, std::string* error) {
  toml::parse_result parsed = toml::parse(toml_text);
  if (!parsed) {
    *error = std::string(parsed.error().description());
    return false;
  }
  const toml::table& root = parsed.table();
  if (auto scale = root["time_scale"].value<double>()) config->time_scale = *scale;
  if (auto reg = root["registry"].value<std::string>()) config->registry_name = *reg;
  if (auto dir = root["dir"].value<std::string>()) config->dir = *dir;
  if (auto v = root["mps_max_clients"].value<int64_t>()) config->mps_max_clients = static_cast<int>(*v);
  if (auto v = root["mps_context_mib_per_sm"].value<double>()) config->mps_context_mib_per_sm = *v;
  if (auto v = root["mps_step_us"].value<double>()) config->mps_step_us = *v;
  const toml::array* list = root["device"].as_array();
  if (list == nullptr) return true;
  config->devices.clear();
  for (const toml::node& node : *list) {
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      *error = "[[device]] entries must be tables";
      return false;
    }
    DeviceSpec spec;
    if (auto mem = (*t)["memory"].value<std::string>()) {
      if (!ParseSize(*mem, &spec.memory_bytes, error)) return false;
    } else if (auto bytes = (*t)["memory"].value<int64_t>()) {
      spec.memory_bytes = static_cast<uint64_t>(*bytes);
    }
    if (auto name = (*t)["name"].value<std::string>()) spec.name = *name;
    static constexpr const char* kNumeric[] = {"tflops", "mem_gbps", "link_gbps", "launch_us", "sms", "cc"};
    for (const char* key : kNumeric) {
      if (auto v = (*t)[key].value<double>()) {
        if (!ApplyAttribute(key, std::to_string(*v), &spec, error)) return false;
      }
    }
    int64_t count = (*t)["count"].value_or<int64_t>(1);
    for (int64_t i = 0; i < count; ++i) config->devices.push_back(spec);
  }
  if (config->devices.empty() || config->devices.size() > 16) {
    *error = "the configuration must name 1..16 devices";
    return false;
  }
  return true;
}

std::optional<Config> LoadConfigFromEnvironment(std::string* error) {
  Config config;
  config.devices.emplace_back();
  if (const char* path = std::getenv("SIMCUDA_CONFIG"); path != nullptr && *path != '\0') {
    std::ifstream in(path);
    if (!in) {
      *error = std::string("cannot read SIMCUDA_CONFIG file ") + path;
      return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    if (!ParseTomlConfig(text.str(), &config, error)) {
      *error = std::string("SIMCUDA_CONFIG ") + path + ": " + *error;
      return std::nullopt;
    }
  }
  if (const char* list = std::getenv("SIMCUDA_DEVICES"); list != nullptr && *list != '\0') {
    std::optional<std::vector<DeviceSpec>> devices = ParseDeviceList(list, error);
    if (!devices) {
      *error = "SIMCUDA_DEVICES: " + *error;
      return std::nullopt;
    }
    config.devices = std::move(*devices);
  }
  if (const char* link = std::getenv("SIMCUDA_LINK_GBPS"); link != nullptr && *link != '\0') {
    std::optional<double> v = ParseNumber(link);
    if (!v) {
      *error = "SIMCUDA_LINK_GBPS must be a non-negative number";
      return std::nullopt;
    }
    for (DeviceSpec& d : config.devices) d.link_bytes_per_s = *v * 1e9;
  }
  if (const char* scale = std::getenv("SIMCUDA_TIME_SCALE"); scale != nullptr && *scale != '\0') {
    std::optional<double> v = ParseNumber(scale);
    if (!v || *v <= 0) {
      *error = "SIMCUDA_TIME_SCALE must be a positive number";
      return std::nullopt;
    }
    config.time_scale = *v;
  }
  if (const char* ms = std::getenv("SIMCUDA_CHECKPOINT_REPLY_MS"); ms != nullptr && *ms != '\0') {
    std::optional<double> v = ParseNumber(ms);
    if (!v || *v < 1 || *v != static_cast<double>(static_cast<int64_t>(*v))) {
      *error = "SIMCUDA_CHECKPOINT_REPLY_MS must be a positive whole number of milliseconds";
      return std::nullopt;
    }
    config.checkpoint_reply_ms = static_cast<int64_t>(*v);
  }
  if (const char* v = std::getenv("SIMCUDA_MPS_MAX_CLIENTS"); v != nullptr && *v != '\0') {
    std::optional<double> n = ParseNumber(v);
    if (!n || *n != static_cast<double>(static_cast<int>(*n))) {
      *error = "SIMCUDA_MPS_MAX_CLIENTS must be a whole number (1..64), not '" + std::string(v) + "'";
      return std::nullopt;
    }
    config.mps_max_clients = static_cast<int>(*n);
  }
  if (config.mps_max_clients < 1 || config.mps_max_clients > 64) {
    *error = "SIMCUDA_MPS_MAX_CLIENTS (mps_max_clients) must be 1..64, not " +
             std::to_string(config.mps_max_clients);
    return std::nullopt;
  }
  if (const char* v = std::getenv("SIMCUDA_MPS_CONTEXT_MIB_PER_SM"); v != nullptr && *v != '\0') {
    std::optional<double> n = ParseNumber(v);
    if (!n) {
      *error = "SIMCUDA_MPS_CONTEXT_MIB_PER_SM must be a non-negative number, not '" + std::string(v) + "'";
      return std::nullopt;
    }
    config.mps_context_mib_per_sm = *n;
  }
  if (const char* v = std::getenv("SIMCUDA_MPS_STEP_US"); v != nullptr && *v != '\0') {
    std::optional<double> n = ParseNumber(v);
    if (!n || *n <= 0) {
      *error = "SIMCUDA_MPS_STEP_US must be a positive number, not '" + std::string(v) + "'";
      return std::nullopt;
    }
    config.mps_step_us = *n;
  }
  if (const char* pop = std::getenv("SIMCUDA_POPULATE"); pop != nullptr) {
    config.populate = std::string_view(pop) == "1";
  }
  if (const char* reg = std::getenv("SIMCUDA_REGISTRY"); reg != nullptr && *reg != '\0') {
    config.registry_name = reg;
  }
  if (config.registry_name.empty()) {
    // Same user + same device memory sizes -> same simulated GPUs.
    std::string key;
    for (const DeviceSpec& d : config.devices) key += std::to_string(d.memory_bytes) + ";";
    char name[64];
    std::snprintf(name, sizeof name, "/simcuda-%u-%016zx", static_cast<unsigned>(getuid()),
                  std::hash<std::string>{}(key));
    config.registry_name = name;
  }
  if (config.registry_name.front() != '/') config.registry_name.insert(0, "/");
  if (const char* dir = std::getenv("SIMCUDA_DIR"); dir != nullptr && *dir != '\0') config.dir = dir;
  if (config.dir.empty() || config.dir.front() != '/') {
    *error = "SIMCUDA_DIR must be an absolute path, not '" + config.dir + "'";
    return std::nullopt;
  }
  while (config.dir.size() > 1 && config.dir.back() == '/') config.dir.pop_back();
  return config;
}

}  // namespace simcuda
