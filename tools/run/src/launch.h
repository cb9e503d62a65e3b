// gshare-run's logic, apart from main(): validating the operator's values and building the
// environment a function runs with under the shim (LD_PRELOAD=libgshare.so, GSHARE_*).
// Pure functions except FindPreloadLibrary (reads the file system); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gshare/common/status.h"

namespace gshare::run {

struct LaunchOptions {
  std::string memory;         // --memory, e.g. "1GiB"
  std::string slo;            // --slo, e.g. "50ms"
  std::string name;           // --name
  std::string arbiter;        // --arbiter socket ("" = the default; "none" = stand-alone)
  std::string log_level;      // --log-level ("" = the shim's default)
  std::string idle_release;   // --idle-release, e.g. "300us" ("" = the shim's default)
  std::string fail;           // --fail open|closed ("" = the shim's default)
  std::string preload;        // --preload path of libgshare.so ("" = search)
};

inline constexpr const char* kDefaultArbiterSocket = "/run/gshare/arbiter.sock";

// The GSHARE_* variables for `opts` ("NAME=value"), or a kInvalidArgument status whose message
// names the flag.
Result<std::vector<std::string>> ShimEnvironment(const LaunchOptions& opts);

// Where libgshare.so is: `explicit_path` if given (must exist), else next to the gshare-run
// binary (`self_exe`'s directory, then ../lib), then `install_libdir`.
// A kInvalidArgument status saying where it looked when none exists.
Result<std::string> FindPreloadLibrary(const std::string& explicit_path,
                                       const std::string& self_exe,
                                       const std::string& install_libdir);

// LD_PRELOAD after adding `lib` to `existing` (kept first; `lib` appended once).
std::string AppendPreload(const std::string& existing, const std::string& lib);

}  // namespace gshare::run
