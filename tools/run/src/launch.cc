// gshare-run's validation of sizes, durations and names, and the shim's environment.
#include "launch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "gshare/common/units.h"

namespace gshare::run {
namespace {

constexpr uint64_t kMinMemory = uint64_t{1} << 20;   // 1 MiB
constexpr uint64_t kMaxMemory = uint64_t{1} << 44;   // 16 TiB, the protocol's limit
constexpr int64_t kMaxSloMs = 3'600'000;             // one hour, the protocol's limit
constexpr size_t kMaxName = 127;

bool IsFile(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The error of a bad value or a missing library: the operator's to fix.
Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

std::string Dir(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

Result<std::vector<std::string>> ShimEnvironment(const LaunchOptions& o) {
  std::vector<std::string> vars;
  const auto bytes = ParseByteSize(o.memory);
  if (!bytes.ok()) {
    return Invalid("--memory '" + o.memory + "': " + bytes.status().message() + " (e.g. 1GiB, 512MiB)");
  }
  if (*bytes < kMinMemory || *bytes > kMaxMemory) {
    return Invalid("--memory '" + o.memory + "': must be between 1MiB and 16TiB");
  }
  if (*bytes % kMinMemory != 0) {
    return Invalid("--memory '" + o.memory + "': must be a whole number of MiB");
  }
  const auto slo = ParseDuration(o.slo);
  if (!slo.ok()) return Invalid("--slo '" + o.slo + "': " + slo.status().message() + " (e.g. 50ms, 1s)");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*slo);
  if (ms.count() < 1 || ms.count() > kMaxSloMs || ms != *slo) {
    return Invalid("--slo '" + o.slo + "': must be a whole number of milliseconds from 1ms to 1h");
  }
  if (o.name.empty() || o.name.size() > kMaxName) {
    return Invalid("--name '" + o.name + "': must be 1 to 127 characters");
  }
  for (char ch : o.name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                    ch == '-' || ch == '_' || ch == '.';
    if (!ok) {
      return Invalid("--name '" + o.name + "': only letters, digits, '-', '_' and '.' are allowed");
    }
  }
  vars.push_back("GSHARE_VGPU_MEMORY=" + std::to_string(*bytes >> 20) + "MiB");
  vars.push_back("GSHARE_SLO_MS=" + std::to_string(ms.count()));
  vars.push_back("GSHARE_FUNCTION=" + o.name);
  if (o.arbiter != "none") {
    const std::string socket = o.arbiter.empty() ? kDefaultArbiterSocket : o.arbiter;
    if (socket.size() >= 108) {
      return Invalid("--arbiter '" + socket +
                     "': longer than a Unix socket path allows (107 bytes)");
    }
    vars.push_back("GSHARE_ARBITER_SOCKET=" + socket);
  }
  if (!o.log_level.empty()) {
    static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
    bool known = false;
    for (const char* l : kLevels) known |= o.log_level == l;
    if (!known) {
      return Invalid("--log-level '" + o.log_level +
                     "': not one of trace, debug, info, warn, error, critical, off");
    }
    vars.push_back("GSHARE_LOG_LEVEL=" + o.log_level);
  }
  if (!o.idle_release.empty()) {
    const auto d = ParseDuration(o.idle_release);
    const auto us = d.ok() ? std::chrono::duration_cast<std::chrono::microseconds>(*d).count() : 0;
    if (!d.ok() || us < 1 || us > 10'000'000) {
      return Invalid("--idle-release '" + o.idle_release + "': must be a duration from 1us to 10s");
    }
    vars.push_back("GSHARE_IDLE_RELEASE_US=" + std::to_string(us));
  }
  if (!o.fail.empty()) {
    if (o.fail != "open" && o.fail != "closed") {
      return Invalid("--fail '" + o.fail + "': must be 'open' or 'closed'");
    }
    vars.push_back("GSHARE_ARBITER_FAIL=" + o.fail);
  }
  return vars;
}

Result<std::string> FindPreloadLibrary(const std::string& explicit_path,
                                       const std::string& self_exe,
                                       const std::string& install_libdir) {
  if (!explicit_path.empty()) {
    if (IsFile(explicit_path)) return explicit_path;
    return Invalid("--preload '" + explicit_path + "': no such file");
  }
  const std::string bin = Dir(self_exe);
  std::vector<std::string> candidates = {bin + "/libgshare.so", bin + "/../lib/libgshare.so"};
  if (!install_libdir.empty()) candidates.push_back(install_libdir + "/libgshare.so");
  for (const std::string& c : candidates) {
    if (!IsFile(c)) continue;
    char resolved[PATH_MAX];
    return ::realpath(c.c_str(), resolved) != nullptr ? std::string(resolved) : c;
  }
  return Invalid("libgshare.so not found next to gshare-run (" + bin + ", " + bin + "/../lib)" +
                 (install_libdir.empty() ? std::string() : " nor in " + install_libdir) +
                 "; pass --preload PATH");
}

std::string AppendPreload(const std::string& existing, const std::string& lib) {
  if (existing.empty()) return lib;
  // Already there (e.g. gshare-run nested in a wrapper): keep it as it is.
  size_t start = 0;
  while (start <= existing.size()) {
    const size_t end = existing.find_first_of(": ", start);
    const std::string item = existing.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (item == lib) return existing;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return existing + ":" + lib;
}

}  // namespace gshare::run
