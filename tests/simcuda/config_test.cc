// Unit tests of simcuda's configuration parsing (SIMCUDA_DEVICES syntax and TOML).
#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "config.h"

namespace simcuda {
namespace {

TEST(DeviceList, CountTimesSize) {
  std::string error;
  auto devices = ParseDeviceList("2x16GiB", &error);
  ASSERT_TRUE(devices) << error;
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[1].memory_bytes, 16ull << 30);
}

TEST(DeviceList, PerDeviceSizesAndAttributes) {
  std::string error;
  auto devices = ParseDeviceList("16GiB, 8GiB:tflops=10:mem_gbps=900:link_gbps=0:name=small", &error);
  ASSERT_TRUE(devices) << error;
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].memory_bytes, 16ull << 30);
  EXPECT_EQ((*devices)[0].link_bytes_per_s, 4e9);  // default
  const DeviceSpec& d = (*devices)[1];
  EXPECT_EQ(d.memory_bytes, 8ull << 30);
  EXPECT_DOUBLE_EQ(d.flops, 10e12);
  EXPECT_DOUBLE_EQ(d.memory_bytes_per_s, 900e9);
  EXPECT_DOUBLE_EQ(d.link_bytes_per_s, 0);
  EXPECT_EQ(d.name, "small");
}

TEST(DeviceList, Errors) {
  std::string error;
  EXPECT_FALSE(ParseDeviceList("", &error));
  EXPECT_FALSE(ParseDeviceList("lots", &error));
  EXPECT_FALSE(ParseDeviceList("1GiB:speed=3", &error));
  EXPECT_NE(error.find("speed"), std::string::npos);
  EXPECT_FALSE(ParseDeviceList("1GiB:tflops=abc", &error));
  EXPECT_FALSE(ParseDeviceList("17x1GiB", &error));
}

TEST(Toml, DevicesAndTimeScale) {
  Config config;
  std::string error;
  ASSERT_TRUE(ParseTomlConfig(R"(
time_scale = 0.5
[[device]]
memory = "4GiB"
count = 2
link_gbps = 2.5
[[device]]
memory = "1GiB"
name = "tiny"
)", &config, &error)) << error;
  EXPECT_DOUBLE_EQ(config.time_scale, 0.5);
  ASSERT_EQ(config.devices.size(), 3u);
  EXPECT_EQ(config.devices[0].memory_bytes, 4ull << 30);
  EXPECT_DOUBLE_EQ(config.devices[1].link_bytes_per_s, 2.5e9);
  EXPECT_EQ(config.devices[2].name, "tiny");
  EXPECT_FALSE(ParseTomlConfig("[[device]]\nmemory = \"x\"\n", &config, &error));
  EXPECT_FALSE(ParseTomlConfig("not toml = = 3", &config, &error));
}

// SIMCUDA_CHECKPOINT_REPLY_MS: a whole number of milliseconds; anything else is an error naming
// the variable (cuInit then fails), never a silent fallback.
TEST(Environment, CheckpointReplyBound) {
  const char* saved = std::getenv("SIMCUDA_CHECKPOINT_REPLY_MS");
  const std::string restore = saved != nullptr ? saved : "";
  std::string error;
  ::setenv("SIMCUDA_CHECKPOINT_REPLY_MS", "2500", 1);
  std::optional<Config> config = LoadConfigFromEnvironment(&error);
  ASSERT_TRUE(config.has_value()) << error;
  EXPECT_EQ(config->checkpoint_reply_ms, 2500);
  for (const char* bad : {"soon", "0", "-5", "1.5"}) {
    ::setenv("SIMCUDA_CHECKPOINT_REPLY_MS", bad, 1);
    error.clear();
    EXPECT_FALSE(LoadConfigFromEnvironment(&error).has_value()) << bad;
    EXPECT_NE(error.find("SIMCUDA_CHECKPOINT_REPLY_MS"), std::string::npos) << error;
  }
  if (saved != nullptr) {
    ::setenv("SIMCUDA_CHECKPOINT_REPLY_MS", restore.c_str(), 1);
  } else {
    ::unsetenv("SIMCUDA_CHECKPOINT_REPLY_MS");
  }
  EXPECT_EQ(Config{}.checkpoint_reply_ms, 1000);
}

// SIMCUDA_DIR (the node-wide registry directory): /dev/shm by default, an absolute path with
// trailing slashes dropped; a relative one is an error naming the variable.
TEST(Environment, NodeWideDirectory) {
  std::string error;
  ::unsetenv("SIMCUDA_DIR");
  std::optional<Config> config = LoadConfigFromEnvironment(&error);
  ASSERT_TRUE(config.has_value()) << error;
  EXPECT_EQ(config->dir, "/dev/shm");
  ::setenv("SIMCUDA_DIR", "/run/simcuda//", 1);
  config = LoadConfigFromEnvironment(&error);
  ASSERT_TRUE(config.has_value()) << error;
  EXPECT_EQ(config->dir, "/run/simcuda");
  ::setenv("SIMCUDA_DIR", "run/simcuda", 1);
  EXPECT_FALSE(LoadConfigFromEnvironment(&error).has_value());
  EXPECT_NE(error.find("SIMCUDA_DIR"), std::string::npos) << error;
  ::unsetenv("SIMCUDA_DIR");
  Config toml;
  ASSERT_TRUE(ParseTomlConfig("dir = \"/srv/gpus\"\n", &toml, &error)) << error;
  EXPECT_EQ(toml.dir, "/srv/gpus");
}

}  // namespace
}  // namespace simcuda
