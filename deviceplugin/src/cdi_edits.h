// The container edits of one CDI device, read from the node's CDI spec (JSON; what
// `gshare-cdi generate` writes): the env and mounts a CDI-aware runtime would apply, which
// gshare-device-plugin returns itself to runtimes without CDI, so both paths give the
// container the same shim, socket directory and variables.
// Thread-safety: plain values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gshare/shm/status.h"

namespace gshare::deviceplugin {

struct CdiMount {
  std::string host_path;
  std::string container_path;
  bool read_only = false;
};

struct CdiEdits {
  std::map<std::string, std::string> env;
  std::vector<CdiMount> mounts;
};

// The spec-wide containerEdits plus those of `device_id`'s device (vendor.com/class=name):
// the spec's kind must be vendor.com/class and list a device of that name. Hooks and device
// nodes are refused (gshare's spec has none and the device plugin could not pass them on).
// Errors name the file and what is wrong.
shm::Result<CdiEdits> ReadCdiEdits(const std::string& spec_path, const std::string& device_id);

}  // namespace gshare::deviceplugin
