// Building, checking and recognising gshare's CDI spec (see spec.h).
#include "spec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>

namespace gshare::cdi {
namespace {

using shm::Status;
using shm::StatusCode;

Status Invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool Alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// CDI's name rules: a first character (letter, or letter/digit), a last letter or digit, and
// characters from `extra` besides letters and digits in between.
bool NameMatches(std::string_view s, bool digit_first, std::string_view extra) {
  if (s.empty() || !(digit_first ? Alnum(s.front()) : Alpha(s.front())) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

Status CheckKeys(const nlohmann::json& object, const std::set<std::string>& known, const std::string& where) {
  if (!object.is_object()) return Invalid(where + " must be an object");
  for (const auto& [key, value] : object.items()) {
    if (known.count(key) == 0) return Invalid(where + ": '" + key + "' is not a field of CDI " + kCdiVersion);
  }
  return Status::Ok();
}

bool AbsolutePath(const nlohmann::json& v) {
  return v.is_string() && !v.get<std::string>().empty() && v.get<std::string>().front() == '/';
}

Status CheckEdits(const nlohmann::json& edits, const std::string& where) {
  if (Status s = CheckKeys(edits, {"env", "deviceNodes", "hooks", "mounts"}, where); !s.ok()) return s;
  if (edits.contains("env")) {
    if (!edits["env"].is_array()) return Invalid(where + ".env must be an array");
    for (const auto& e : edits["env"]) {
      const std::string text = e.is_string() ? e.get<std::string>() : std::string();
      const auto eq = text.find('=');
      if (eq == std::string::npos || eq == 0) return Invalid(where + ".env: '" + e.dump() + "' is not NAME=value");
    }
  }
  if (edits.contains("mounts")) {
    if (!edits["mounts"].is_array()) return Invalid(where + ".mounts must be an array");
    for (size_t i = 0; i < edits["mounts"].size(); ++i) {
      const auto& m = edits["mounts"][i];
      const std::string at = where + ".mounts[" + std::to_string(i) + "]";
      if (Status s = CheckKeys(m, {"hostPath", "containerPath", "options", "type"}, at); !s.ok()) return s;
      if (!AbsolutePath(m.value("hostPath", nlohmann::json()))) return Invalid(at + ".hostPath must be an absolute path");
      if (!AbsolutePath(m.value("containerPath", nlohmann::json())))
        return Invalid(at + ".containerPath must be an absolute path");
      if (m.contains("options") && !(m["options"].is_array() &&
                                     std::all_of(m["options"].begin(), m["options"].end(),
                                                 [](const nlohmann::json& o) { return o.is_string(); })))
        return Invalid(at + ".options must be an array of strings");
      if (m.contains("type") && !m["type"].is_string()) return Invalid(at + ".type must be a string");
    }
  }
  return Status::Ok();
}

bool PlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

nlohmann::json BuildSpec(const SpecOptions& options) {
  const std::string socket = options.socket_dir + "/" + options.socket_name;
  nlohmann::json edits = {
      {"env",
       {std::string("LD_PRELOAD=") + kContainerLibrary, "GSHARE_ARBITER_SOCKET=" + socket,
        std::string(kMarkerVariable) + "=gshare-cdi"}},
      {"mounts",
       {
           {{"hostPath", options.library},
            {"containerPath", kContainerLibrary},
            {"type", "bind"},
            {"options", {"ro", "nosuid", "nodev", "bind"}}},
           // The directory, never the socket file: a file bind mount keeps the inode of the
           // socket it found, and after an arbiter restart the shim would never register again.
           // Read-only: tenants may connect to the socket but not put files beside it.
           {{"hostPath", options.socket_dir},
            {"containerPath", options.socket_dir},
            {"type", "bind"},
            {"options", {"ro", "nosuid", "nodev", "noexec", "bind"}}},
       }},
  };
  return {{"cdiVersion", kCdiVersion},
          {"kind", kKind},
          {"devices", {{{"name", kDeviceName}, {"containerEdits", edits}}}}};
}

Status CheckOptions(const SpecOptions& options) {
  if (options.library.empty() || options.library.front() != '/')
    return Invalid("--library must be an absolute path, not '" + options.library + "'");
  if (options.socket_dir.size() < 2 || options.socket_dir.front() != '/')
    return Invalid("--socket-dir must be an absolute path other than /, not '" + options.socket_dir + "'");
  if (!PlainFileName(options.socket_name))
    return Invalid("--socket-name must be a file name, not '" + options.socket_name + "'");
  return Status::Ok();
}

Status CheckHost(const SpecOptions& options) {
  const int fd = ::open(options.library.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Invalid("--library " + options.library + ": " + std::strerror(errno));
  char magic[4] = {};
  const bool elf = ::read(fd, magic, sizeof magic) == 4 && std::memcmp(magic, "\x7f" "ELF", 4) == 0;
  ::close(fd);
  if (!elf) return Invalid("--library " + options.library + " is not an ELF shared object");
  struct stat st{};
  if (::stat(options.socket_dir.c_str(), &st) != 0)
    return Invalid("--socket-dir " + options.socket_dir + ": " + std::strerror(errno) +
                   " (the arbiter's tenant-facing directory must exist before containers mount it)");
  if (!S_ISDIR(st.st_mode)) return Invalid("--socket-dir " + options.socket_dir + " is not a directory");
  for (const char* operator_only : {"control.sock", "events"}) {
    const std::string path = options.socket_dir + "/" + operator_only;
    if (::lstat(path.c_str(), &st) == 0)
      return Invalid("--socket-dir " + options.socket_dir + " holds " + path +
                     ": a container given this directory would reach the operator's controls; move "
                     "control_socket and event_ring to an operator-only directory (docs/containers.md)");
  }
  return Status::Ok();
}

Status ValidateSpec(const nlohmann::json& spec) {
  if (Status s = CheckKeys(spec, {"cdiVersion", "kind", "devices", "containerEdits"}, "spec"); !s.ok()) return s;
  if (spec.value("cdiVersion", "") != kCdiVersion)
    return Invalid(std::string("cdiVersion must be ") + kCdiVersion + " (podman 4.3 rejects later versions)");
  const std::string kind = spec.value("kind", "");
  const auto slash = kind.find('/');
  if (slash == std::string::npos || !NameMatches(kind.substr(0, slash), false, "._-") ||
      !NameMatches(kind.substr(slash + 1), false, "_-"))
    return Invalid("kind '" + kind + "' is not vendor.tld/class");
  if (!spec.contains("devices") || !spec["devices"].is_array() || spec["devices"].empty())
    return Invalid("devices must be a non-empty array");
  std::set<std::string> names;
  for (size_t i = 0; i < spec["devices"].size(); ++i) {
    const auto& d = spec["devices"][i];
    const std::string at = "devices[" + std::to_string(i) + "]";
    if (Status s = CheckKeys(d, {"name", "containerEdits"}, at); !s.ok()) return s;
    const std::string name = d.value("name", "");
    if (!NameMatches(name, true, "_.:-")) return Invalid(at + ".name '" + name + "' is not a CDI device name");
    if (!names.insert(name).second) return Invalid(at + ".name '" + name + "' is defined twice");
    if (!d.contains("containerEdits")) return Invalid(at + " has no containerEdits");
    if (Status s = CheckEdits(d["containerEdits"], at + ".containerEdits"); !s.ok()) return s;
  }
  if (spec.contains("containerEdits")) return CheckEdits(spec["containerEdits"], "containerEdits");
  return Status::Ok();
}

bool WrittenByGshareCdi(const nlohmann::json& spec) {
  if (!spec.is_object() || spec.value("kind", "") != kKind || !spec.contains("devices") ||
      !spec["devices"].is_array())
    return false;
  const std::string marker = std::string(kMarkerVariable) + "=";
  for (const auto& d : spec["devices"]) {
    if (!d.is_object() || !d.contains("containerEdits") || !d["containerEdits"].is_object()) continue;
    const auto& env = d["containerEdits"].value("env", nlohmann::json::array());
    if (!env.is_array()) continue;
    for (const auto& e : env) {
      if (e.is_string() && e.get<std::string>().rfind(marker, 0) == 0) return true;
    }
  }
  return false;
}

}  // namespace gshare::cdi
