// Implementation of data_dir.h: finding the shipped data at run time.
#include "gshare/workload/data_dir.h"

#include <cstdlib>
#include <system_error>
#include <vector>

#ifndef GSHARE_WORKLOAD_SOURCE_DATA_DIR
#error "the build must define GSHARE_WORKLOAD_SOURCE_DATA_DIR (tools/workload/CMakeLists.txt)"
#endif

namespace gshare::workload {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = "default-catalog.toml";
constexpr const char* kEnvVar = "GSHARE_WORKLOAD_DATA_DIR";

bool HasData(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kMarker, ec);
}

Result<fs::path> Under(const char* relative) {
  Result<fs::path> dir = ShippedDataDir();
  if (!dir.ok()) return dir;
  return *dir / relative;
}

}  // namespace

Result<fs::path> ShippedDataDir() {
  if (const char* env = std::getenv(kEnvVar); env != nullptr && *env != '\0') {
    if (HasData(env)) return fs::path(env);
    return Fail(std::string("$") + kEnvVar + "=" + env + " does not contain " + kMarker);
  }
  std::vector<fs::path> tried;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    tried.push_back(exe.parent_path().parent_path() / "share" / "gshare" / "workload");
  }
  tried.emplace_back(GSHARE_WORKLOAD_SOURCE_DATA_DIR);
  std::string looked;
  for (const fs::path& dir : tried) {
    if (HasData(dir)) return dir;
    looked += " " + dir.string();
  }
  return Fail(std::string("gshare workload data not found (looked for ") + kMarker + " in" +
              looked + "); set $" + kEnvVar);
}

Result<fs::path> ShippedAzureLlmTracePath() {
  return Under("azure-llm-2023/AzureLLMInferenceTrace_conv.csv");
}

Result<fs::path> ShippedCatalogPath() { return Under(kMarker); }

Result<fs::path> ShippedLlmCatalogPath() { return Under("llm-catalog.toml"); }

}  // namespace gshare::workload
