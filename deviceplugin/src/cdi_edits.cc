// ReadCdiEdits (cdi_edits.h): the env and mounts of one device of a CDI spec in JSON.
#include "cdi_edits.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace gshare::deviceplugin {
namespace {

using nlohmann::json;

shm::Status Bad(const std::string& path, const std::string& what) {
  return shm::Status(shm::StatusCode::kMalformed, "CDI spec " + path + ": " + what);
}

// Adds one containerEdits object to `out`.
shm::Status AddEdits(const std::string& path, const json& edits, const std::string& where,
                     CdiEdits& out) {
  if (!edits.is_object()) return Bad(path, where + " is not an object");
  for (const auto& [key, value] : edits.items()) {
    if (key == "env") {
      if (!value.is_array()) return Bad(path, where + ".env is not a list");
      for (const auto& e : value) {
        if (!e.is_string()) return Bad(path, where + ".env has an entry that is not a string");
        const std::string kv = e.get<std::string>();
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
          return Bad(path, where + ".env entry '" + kv + "' is not NAME=VALUE");
        out.env[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    } else if (key == "mounts") {
      if (!value.is_array()) return Bad(path, where + ".mounts is not a list");
      for (const auto& m : value) {
        if (!m.is_object() || !m.contains("hostPath") || !m["hostPath"].is_string() ||
            !m.contains("containerPath") || !m["containerPath"].is_string())
          return Bad(path, where + ".mounts has an entry without hostPath and containerPath");
        CdiMount mount{m["hostPath"].get<std::string>(), m["containerPath"].get<std::string>(), false};
        if (m.contains("options")) {
          if (!m["options"].is_array()) return Bad(path, where + ".mounts options is not a list");
          for (const auto& o : m["options"])
            if (o.is_string() && o.get<std::string>() == "ro") mount.read_only = true;
        }
        out.mounts.push_back(std::move(mount));
      }
    } else if (key == "hooks" || key == "deviceNodes") {
      if (value.is_array() && value.empty()) continue;
      return Bad(path, where + "." + key +
                           " is not supported by gshare-device-plugin's env strategy (use "
                           "device_list_strategy = \"cdi\")");
    } else if (key == "additionalGIDs" || key == "intelRdt") {
      continue;  // nothing the plugin can pass on; a CDI runtime applies them
    } else {
      return Bad(path, where + " has an unknown field '" + key + "'");
    }
  }
  return {};
}

}  // namespace

shm::Result<CdiEdits> ReadCdiEdits(const std::string& spec_path, const std::string& device_id) {
  std::ifstream in(spec_path);
  if (!in)
    return shm::Status(shm::StatusCode::kUnavailable,
                       "CDI spec " + spec_path + " cannot be read (run gshare-cdi generate)");
  std::stringstream text;
  text << in.rdbuf();
  const json spec = json::parse(text.str(), nullptr, false);
  if (spec.is_discarded() || !spec.is_object()) return Bad(spec_path, "not a JSON object");
  const auto eq = device_id.find('=');
  const std::string kind = device_id.substr(0, eq);
  const std::string name = device_id.substr(eq + 1);
  if (!spec.contains("kind") || !spec["kind"].is_string())
    return Bad(spec_path, "no \"kind\"");
  if (spec["kind"].get<std::string>() != kind)
    return Bad(spec_path, "kind is '" + spec["kind"].get<std::string>() + "', not '" + kind + "'");
  CdiEdits edits;
  if (spec.contains("containerEdits"))
    if (auto s = AddEdits(spec_path, spec["containerEdits"], "containerEdits", edits); !s.ok())
      return s;
  if (!spec.contains("devices") || !spec["devices"].is_array())
    return Bad(spec_path, "no \"devices\" list");
  for (const auto& d : spec["devices"]) {
    if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) continue;
    if (d["name"].get<std::string>() != name) continue;
    if (d.contains("containerEdits"))
      if (auto s = AddEdits(spec_path, d["containerEdits"], "devices[" + name + "].containerEdits",
                            edits);
          !s.ok())
        return s;
    return edits;
  }
  return Bad(spec_path, "no device named '" + name + "' (the CDI id is " + device_id + ")");
}

}  // namespace gshare::deviceplugin
