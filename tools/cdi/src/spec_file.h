// Writing the CDI spec file: atomically (a temporary file in the same directory, flushed to
// disk, then renamed over the target, so a runtime never reads half a spec), never over a file
// gshare-cdi did not write unless forced. Reads and writes the file system; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gshare/shm/status.h"

namespace gshare::cdi {

// Writes `spec` as JSON to `path` (mode 0644; the directory is created, mode 0755, if missing).
// An existing file is replaced only if gshare-cdi wrote it (WrittenByGshareCdi) or `force`.
// Errors name the path: kPermissionDenied for a directory that is not writable, kRefused for a
// file written by someone else (the message says --force), kOsError otherwise.
shm::Status WriteSpecFile(const std::string& path, const nlohmann::json& spec, bool force);

}  // namespace gshare::cdi
