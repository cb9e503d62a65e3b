// Unit tests of the arbiter's configuration: defaults, TOML keys, flags overriding the file,
// and that every bad value is an error naming its key or flag.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gshare/arbiter/arbiter.h"
#include "gshare/arbiter/config.h"

namespace gshare::arbiter {
namespace {

ConfigResult Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gshare-arbiter");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(ArbiterConfig, Defaults) {
  const ConfigResult r = Parse({});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.socket_path, "/run/gshare/arbiter.sock");
  EXPECT_EQ(r.config.slice, std::chrono::milliseconds(20));
  EXPECT_EQ(r.config.policy, "aggressive");
  EXPECT_EQ(r.config.fail_mode, FailMode::kOpen);
  EXPECT_TRUE(r.config.gpus.empty());
  EXPECT_FALSE(r.config.gpu_memory_bytes.has_value());
}

TEST(ArbiterConfig, TomlKeys) {
  const ConfigResult r = ParseConfigToml(R"(
socket = "/tmp/a.sock"
gpus = [0, 2]
gpu_memory = "16GiB"
memory_reserve = "512MiB"
slice = "5ms"
idle_release = "200us"
preempt_grace = "1s"
swap_order_timeout = "30s"
deep_evict_after = "10min"
policy = "fifo"
metrics = "127.0.0.1:9464"
fail_mode = "closed"
event_ring_capacity = 1024
)",
                                         ArbiterConfig{});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.socket_path, "/tmp/a.sock");
  EXPECT_EQ(r.config.gpus, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(*r.config.gpu_memory_bytes, 16ull << 30);
  EXPECT_EQ(r.config.memory_reserve_bytes, 512ull << 20);
  EXPECT_EQ(r.config.slice, std::chrono::milliseconds(5));
  EXPECT_EQ(r.config.idle_release, std::chrono::microseconds(200));
  EXPECT_EQ(r.config.preempt_grace, std::chrono::seconds(1));
  EXPECT_EQ(r.config.swap_order_timeout, std::chrono::seconds(30));
  EXPECT_EQ(r.config.deep_evict_after, std::chrono::minutes(10));
  EXPECT_EQ(r.config.policy, "fifo");
  EXPECT_EQ(r.config.metrics_address, "127.0.0.1:9464");
  EXPECT_EQ(r.config.fail_mode, FailMode::kClosed);
  EXPECT_EQ(r.config.event_ring_capacity, 1024u);
}

TEST(ArbiterConfig, ArbiterTableAccepted) {
  const ConfigResult r = ParseConfigToml("[arbiter]\nslice = \"7ms\"\n", ArbiterConfig{});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.slice, std::chrono::milliseconds(7));
}

struct BadValue {
  const char* toml;
  const char* key;
};

class ArbiterConfigBad : public ::testing::TestWithParam<BadValue> {};

TEST_P(ArbiterConfigBad, ErrorNamesTheKey) {
  const ConfigResult r = ParseConfigToml(GetParam().toml, ArbiterConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find(std::string("'") + GetParam().key + "'"), std::string::npos) << r.error;
}

INSTANTIATE_TEST_SUITE_P(
    Keys, ArbiterConfigBad,
    ::testing::Values(BadValue{"slice = \"20\"", "slice"}, BadValue{"slice = \"0ms\"", "slice"},
                      BadValue{"idle_release = \"fast\"", "idle_release"},
                      BadValue{"swap_order_timeout = \"soon\"", "swap_order_timeout"},
                      BadValue{"swap_order_timeout = \"0s\"", "swap_order_timeout"},
                      BadValue{"gpu_memory = \"12 parsecs\"", "gpu_memory"},
                      BadValue{"gpus = [0, 0]", "gpus"}, BadValue{"gpus = [-1]", "gpus"},
                      BadValue{"memory_reserve = \"-1GiB\"", "memory_reserve"},
                      BadValue{"fail_mode = \"maybe\"", "fail_mode"},
                      BadValue{"lease = \"sometimes\"", "lease"},
                      BadValue{"metrics = \"localhost\"", "metrics"},
                      BadValue{"metrics = \"h:99999\"", "metrics"},
                      BadValue{"socket_mode = \"999\"", "socket_mode"},
                      BadValue{"event_ring_capacity = 1000", "event_ring_capacity"},
                      BadValue{"log_level = \"loud\"", "log_level"},
                      BadValue{"policy = \"\"", "policy"},
                      BadValue{"no_such_key = 1", "no_such_key"},
                      BadValue{"slice = 3.5", "slice"}));

TEST(ArbiterConfig, SyntaxErrorSaysLine) {
  const ConfigResult r = ParseConfigToml("slice = \n", ArbiterConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("line 1"), std::string::npos) << r.error;
}

TEST(ArbiterConfig, FlagsOverrideFile) {
  const std::string path = "/tmp/gshare-arbiter-config-" + std::to_string(::getpid()) + ".toml";
  {
    std::ofstream out(path);
    out << "slice = \"5ms\"\npolicy = \"fifo\"\n";
  }
  const ConfigResult r = Parse({"--config", path, "--slice", "9ms"});
  std::remove(path.c_str());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.slice, std::chrono::milliseconds(9));
  EXPECT_EQ(r.config.policy, "fifo");
}

TEST(ArbiterConfig, BadFlagNamesTheFlag) {
  const ConfigResult r = Parse({"--preempt-grace", "soon"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("--preempt-grace"), std::string::npos) << r.error;
  const ConfigResult missing = Parse({"--config", "/nonexistent/gshare.toml"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error.find("--config"), std::string::npos) << missing.error;
  const ConfigResult unknown = Parse({"--bogus", "1"});
  EXPECT_FALSE(unknown.ok());
}

// --help: every flag has a placeholder and a description of its own that names its default
// (the texts live next to each key's setter in config.cc).
TEST(ArbiterConfig, HelpDescribesEveryFlag) {
  const ConfigResult r = Parse({"--help"});
  ASSERT_TRUE(r.help);
  const std::string& help = r.error;
  int flags = 0;
  size_t at = 0;
  while ((at = help.find("\n  --", at)) != std::string::npos) {
    const size_t end = help.find('\n', at + 1);
    std::string entry = help.substr(at + 3, end - at - 3);  // "--flag KIND   description"
    // A long flag puts its description on the next line.
    if (entry.find("  ") == std::string::npos && end != std::string::npos)
      entry += help.substr(end, help.find('\n', end + 1) - end);
    at = end;
    ++flags;
    EXPECT_EQ(entry.find("see docs/operating.md"), std::string::npos) << entry;
    const size_t gap = entry.find("  ");
    ASSERT_NE(gap, std::string::npos) << "no description: " << entry;
    ASSERT_NE(entry.substr(0, gap).find(' '), std::string::npos) << "no placeholder: " << entry;
    const std::string flag = entry.substr(0, entry.find(' '));
    if (flag == "--config" || flag == "--summary") continue;  // command line only, no default
    EXPECT_NE(entry.find("(default"), std::string::npos) << "no default named: " << entry;
  }
  EXPECT_GE(flags, 30) << help;
  EXPECT_NE(help.find("--doorbell-rate N"), std::string::npos) << help;
}

TEST(ArbiterConfig, ResolveGpusWithoutDriver) {
  ArbiterConfig c;
  c.gpu_memory_bytes = 8ull << 30;
  c.gpu_count = 2;
  auto gpus = ResolveGpus(c);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].ordinal, 1u);
  c.gpus = {5};
  c.gpu_count = 2;
  c.gpu_memory_bytes = 8ull << 30;
  auto picked = ResolveGpus(c);
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ((*picked)[0].ordinal, 5u);
  c.gpus = {};
  c.memory_reserve_bytes = 9ull << 30;
  auto bad = ResolveGpus(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("memory_reserve"), std::string::npos);
}

TEST(ArbiterConfig, UnknownPolicyRefusedAtCreate) {
  ArbiterConfig c;
  c.socket_path = "/tmp/gshare-arb-cfg-" + std::to_string(::getpid()) + ".sock";
  c.policy = "no-such-policy";
  c.libcuda = "/nonexistent/libcuda.so.1";
  auto a = Arbiter::Create(c, {{0, 1ull << 30}}, false);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("policy"), std::string::npos) << a.status().message();
}

}  // namespace
}  // namespace gshare::arbiter
