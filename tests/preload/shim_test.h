// ShimTest: the fixture of the shim's process tests on simcuda — a private simcuda registry and
// scratch directory per test, the environment of a probe under (or without) LD_PRELOAD, and the
// helpers that read a probe's "key=value" answer.
//
// Thread-safety: one test thread.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace gshare::test {

inline constexpr uint64_t kMiB = 1ull << 20;
inline constexpr uint64_t kGiB = 1ull << 30;

// Per-test simcuda registry and scratch directory, removed afterwards.
class ShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    tag_ = std::to_string(getpid()) + "-" + std::to_string(counter++);
    registry_ = "/gshare-preload-test-" + tag_;
    dir_ = std::filesystem::temp_directory_path() / ("gshare-preload-" + tag_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    shm_unlink(registry_.c_str());
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // The environment of a probe on one simulated device of `device` bytes.
  std::map<std::string, std::string> Env(bool shim, const std::string& quota = "1GiB",
                                         const std::string& device = "4GiB") const {
    std::map<std::string, std::string> env = {
        {"LD_LIBRARY_PATH", GSHARE_SIMCUDA_DIR},
        {"SIMCUDA_DEVICES", "1x" + device},
        {"SIMCUDA_REGISTRY", registry_},
        {"SIMCUDA_KERNELS", GSHARE_SIMCUDA_KERNELS},
        {"SIMCUDA_LINK_GBPS", "0"},
        {"GSHARE_VGPU_MEMORY", quota},
        {"GSHARE_LOG_LEVEL", ""},
        {"GSHARE_LOG_FILE", ""},
        {"GSHARE_CONTROL_SOCKET", ""},
        {"LD_PRELOAD", shim ? GSHARE_PRELOAD_LIB : ""},
    };
    return env;
  }
  std::string tag_;
  std::string registry_;
  std::filesystem::path dir_;
};

inline uint64_t U(const std::map<std::string, std::string>& kv, const std::string& key) {
  const auto it = kv.find(key);
  return it == kv.end() ? ~0ull : std::stoull(it->second);
}

inline std::string S(const std::map<std::string, std::string>& kv, const std::string& key) {
  const auto it = kv.find(key);
  return it == kv.end() ? "<missing>" : it->second;
}

// Expects every key of `expected` to hold its value in `kv` (the key is named on failure).
inline void ExpectValues(const std::map<std::string, std::string>& kv,
                  const std::map<std::string, std::string>& expected) {
  for (const auto& [key, value] : expected) EXPECT_EQ(S(kv, key), value) << key;
}

// A number as the probe prints it.
inline std::string N(uint64_t value) { return std::to_string(value); }

}  // namespace gshare::test
