// Environment parsing for the shim (see config.h).
#include "runtime/config.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <string_view>

#include "gshare/common/units.h"
#include "gshare/shm/wire.h"

namespace gshare::preload {
namespace {

std::string Get(const char* (*getenv_fn)(const char*, void*), void* ctx, const char* name) {
  const char* v = getenv_fn(name, ctx);
  return v == nullptr ? std::string() : std::string(v);
}

// Errors fail cuInit (kInvalidArgument); warnings are only logged. One clause per variable.
void AddError(Status* errors, const std::string& message) {
  *errors = Status(StatusCode::kInvalidArgument,
                   errors->ok() ? message : errors->message() + "; " + message);
}

void AddWarning(std::string* warnings, const std::string& message) {
  if (!warnings->empty()) warnings->append("; ");
  warnings->append(message);
}

// A duration variable that "0" or "off" turns off (0): `*out` unchanged when unset, an error
// naming `name` when malformed or longer than `max` (`max_text`); `examples` for the message.
void SetDurationOrOff(const std::string& value, const char* name, std::chrono::nanoseconds max,
                      const char* max_text, const char* examples, uint64_t* out,
                      Status* errors) {
  if (value == "0" || value == "off") {
    *out = 0;
    return;
  }
  if (value.empty()) return;
  const auto d = gshare::ParseDuration(value);
  if (!d.ok()) {
    AddError(errors, std::string(name) + "='" + value + "' is not a duration (" +
                         d.status().message() + "); expected e.g. " + examples);
  } else if (*d > max) {
    AddError(errors, std::string(name) + "='" + value + "' is longer than " + max_text);
  } else {
    *out = static_cast<uint64_t>(d->count());
  }
}

std::string ExpandPid(std::string text, int pid) {
  const std::string pid_text = std::to_string(pid);
  for (size_t at = text.find("%p"); at != std::string::npos; at = text.find("%p", at)) {
    text.replace(at, 2, pid_text);
    at += pid_text.size();
  }
  return text;
}

// A positive whole number in variable `name`; nullopt when unset or malformed (then an error
// naming the variable is added).
std::optional<uint32_t> ParsePositive(const char* (*getenv_fn)(const char*, void*), void* ctx,
                                      const char* name, const char* unit, Status* errors) {
  const std::string text = Get(getenv_fn, ctx, name);
  if (text.empty()) return std::nullopt;
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0) {
    AddError(errors, std::string(name) + "='" + text + "' is not a positive whole number of " +
                         unit);
    return std::nullopt;
  }
  return value;
}

// Why `name` cannot be sent to the arbiter as the function's name (the registration's rule:
// printable ASCII, at most shm::kFunctionNameSize - 1 bytes), "" if it can. The value itself
// is not quoted (it may hold control characters); the first bad byte is shown in hex.
std::string FunctionNameProblem(const std::string& name) {
  constexpr size_t kMax = shm::kFunctionNameSize - 1;
  if (name.size() > kMax) {
    return "is " + std::to_string(name.size()) + " bytes long; at most " + std::to_string(kMax) +
           " bytes of printable ASCII are allowed";
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c > 0x7e) {
      static constexpr char kHex[] = "0123456789abcdef";
      return std::string("has the non-printable byte 0x") + kHex[c >> 4] + kHex[c & 15] +
             " at offset " + std::to_string(i) +
             "; only printable ASCII (0x20-0x7e) is allowed";
    }
  }
  return {};
}

// GSHARE_CORUN_DEMAND: "compute=P,bandwidth=P" (either may be left out), whole percentages
// 1-100. A malformed value is an error naming the variable and the item.
void ParseCorunDemand(const std::string& value, Config* config) {
  if (value.empty()) return;
  size_t at = 0;
  while (at <= value.size()) {
    const size_t comma = std::min(value.find(',', at), value.size());
    const std::string item = value.substr(at, comma - at);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    uint8_t* out = key == "compute" ? &config->compute_demand_pct
                   : key == "bandwidth" ? &config->bandwidth_demand_pct
                                        : nullptr;
    unsigned pct = 0;
    const char* begin = item.data() + (eq == std::string::npos ? item.size() : eq + 1);
    const auto [end, ec] = std::from_chars(begin, item.data() + item.size(), pct);
    if (out == nullptr || eq == std::string::npos || ec != std::errc() ||
        end != item.data() + item.size() || begin == end || pct < 1 || pct > 100) {
      AddError(&config->error, "GSHARE_CORUN_DEMAND: '" + item +
                                   "' is not compute=PERCENT or bandwidth=PERCENT (1-100)");
      config->compute_demand_pct = config->bandwidth_demand_pct = 0;
      return;
    }
    *out = static_cast<uint8_t>(pct);
    at = comma + 1;
  }
}

}  // namespace

Config ParseConfig(const char* (*getenv_fn)(const char*, void*), void* ctx, int pid) {
  Config config;
  const std::string memory = Get(getenv_fn, ctx, "GSHARE_VGPU_MEMORY");
  if (!memory.empty()) {
    const auto bytes = gshare::ParseByteSize(memory);
    if (!bytes.ok()) {
      AddError(&config.error, "GSHARE_VGPU_MEMORY='" + memory + "' is not a size (" +
                                  bytes.status().message() +
                                  "); expected e.g. 1536MiB or 2GiB");
    } else if (*bytes == 0) {
      AddError(&config.error, "GSHARE_VGPU_MEMORY='" + memory + "' must be greater than zero");
    } else {
      config.vgpu_memory_bytes = *bytes;
    }
  }
  const std::string keep = Get(getenv_fn, ctx, "GSHARE_KEEP_FREED");
  if (!keep.empty()) {
    const auto bytes = gshare::ParseByteSize(keep);
    if (!bytes.ok()) {
      AddError(&config.error, "GSHARE_KEEP_FREED='" + keep + "' is not a size (" +
                                  bytes.status().message() +
                                  "); expected e.g. 0 or 256MiB");
    } else {
      config.keep_freed_bytes = *bytes;
    }
  }
  config.function_name = Get(getenv_fn, ctx, "GSHARE_FUNCTION");
  if (std::string why = FunctionNameProblem(config.function_name); !why.empty()) {
    AddError(&config.error, "GSHARE_FUNCTION " + why);
    config.function_name.clear();
  }
  config.slo_ms = ParsePositive(getenv_fn, ctx, "GSHARE_SLO_MS", "milliseconds", &config.error);
  const std::string socket = Get(getenv_fn, ctx, "GSHARE_CONTROL_SOCKET");
  config.control_socket_per_pid = socket.find("%p") != std::string::npos;
  config.control_socket = ExpandPid(socket, pid);
  config.real_libcuda = Get(getenv_fn, ctx, "GSHARE_REAL_LIBCUDA");
  config.log_level = Get(getenv_fn, ctx, "GSHARE_LOG_LEVEL");
  config.log_file = Get(getenv_fn, ctx, "GSHARE_LOG_FILE");
  config.arbiter_socket = Get(getenv_fn, ctx, "GSHARE_ARBITER_SOCKET");
  config.idle_release_us =
      ParsePositive(getenv_fn, ctx, "GSHARE_IDLE_RELEASE_US", "microseconds", &config.error)
          .value_or(config.idle_release_us);
  const std::string fail = Get(getenv_fn, ctx, "GSHARE_ARBITER_FAIL");
  if (fail == "closed") {
    config.arbiter_fail_closed = true;
  } else if (!fail.empty() && fail != "open") {
    AddError(&config.error, "GSHARE_ARBITER_FAIL='" + fail + "' must be 'open' or 'closed'");
  }
  const std::string prepin = Get(getenv_fn, ctx, "GSHARE_PREPIN");
  if (prepin == "0") {
    config.prepin = false;
  } else if (!prepin.empty() && prepin != "1") {
    AddError(&config.error, "GSHARE_PREPIN='" + prepin + "' must be 0 or 1");
  }
  const std::string device = Get(getenv_fn, ctx, "GSHARE_DEVICE");
  if (!device.empty()) {
    const auto [end, ec] =
        std::from_chars(device.data(), device.data() + device.size(), config.device);
    if (ec != std::errc() || end != device.data() + device.size() || config.device < 0) {
      AddError(&config.error, "GSHARE_DEVICE='" + device + "' is not a device ordinal (0, 1, ...)");
      config.device = 0;
    }
  }
  SetDurationOrOff(Get(getenv_fn, ctx, "GSHARE_REGISTER_RETRY"), "GSHARE_REGISTER_RETRY",
                   std::chrono::hours(1), "1 h", "5s, 500ms, or 0 or off (never retry)",
                   &config.register_retry_max_ns, &config.error);
  SetDurationOrOff(Get(getenv_fn, ctx, "GSHARE_SHARE_QUERY"), "GSHARE_SHARE_QUERY",
                   std::chrono::seconds(5), "5 s", "200ms, 1s, or 0 or off (never ask)",
                   &config.share_query_ns, &config.error);
  // The pod (attribution only): a malformed value is dropped, never fatal. Never quoted: it
  // may hold anything (the problem names the offending byte's offset and value).
  config.pod_name = Get(getenv_fn, ctx, "GSHARE_POD_NAME");
  if (!config.pod_name.empty()) {
    if (std::string why = shm::PodNameProblem(config.pod_name); !why.empty()) {
      AddWarning(&config.warnings, "GSHARE_POD_NAME " + why + "; dropped (the pod is not named)");
      config.pod_name.clear();
    }
  }
  config.pod_namespace = Get(getenv_fn, ctx, "GSHARE_POD_NAMESPACE");
  if (!config.pod_namespace.empty()) {
    if (std::string why = shm::PodNamespaceProblem(config.pod_namespace); !why.empty()) {
      AddWarning(&config.warnings,
               "GSHARE_POD_NAMESPACE " + why + "; dropped (the pod's namespace is not named)");
      config.pod_namespace.clear();
    }
  }
  ParseCorunDemand(Get(getenv_fn, ctx, "GSHARE_CORUN_DEMAND"), &config);
  const std::string lease = Get(getenv_fn, ctx, "GSHARE_LEASE");
  if (lease == "0") {
    config.lease = false;
  } else if (!lease.empty() && lease != "1") {
    AddError(&config.error, "GSHARE_LEASE='" + lease + "' must be 0 or 1");
  }
  return config;
}

Config ConfigFromEnvironment() {
  return ParseConfig([](const char* name, void*) -> const char* { return std::getenv(name); },
                     nullptr, static_cast<int>(getpid()));
}

}  // namespace gshare::preload
