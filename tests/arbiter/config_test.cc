// Unit tests of the arbiter's configuration: defaults, TOML keys, flags overriding the file,
// and that every bad value is an error naming its key or flag.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gshare/arbiter/arbiter.h"
#include "gshare/arbiter/config.h"

namespace gshare::arbiter {
namespace {

Result<CommandLine> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gshare-arbiter");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(ArbiterConfig, Defaults) {
  const auto r = Parse({});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.socket_path, "/run/gshare/arbiter.sock");
  EXPECT_EQ(r->config.slice, std::chrono::milliseconds(20));
  EXPECT_EQ(r->config.policy, "aggressive");
  EXPECT_EQ(r->config.fail_mode, FailMode::kOpen);
  EXPECT_TRUE(r->config.gpus.empty());
  EXPECT_FALSE(r->config.gpu_memory_bytes.has_value());
}

TEST(ArbiterConfig, TomlKeys) {
  const auto r = ParseConfigToml(R"(
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
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->socket_path, "/tmp/a.sock");
  EXPECT_EQ(r->gpus, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(*r->gpu_memory_bytes, 16ull << 30);
  EXPECT_EQ(r->memory_reserve_bytes, 512ull << 20);
  EXPECT_EQ(r->slice, std::chrono::milliseconds(5));
  EXPECT_EQ(r->idle_release, std::chrono::microseconds(200));
  EXPECT_EQ(r->preempt_grace, std::chrono::seconds(1));
  EXPECT_EQ(r->swap_order_timeout, std::chrono::seconds(30));
  EXPECT_EQ(r->deep_evict_after, std::chrono::minutes(10));
  EXPECT_EQ(r->policy, "fifo");
  EXPECT_EQ(r->metrics_address.address, "127.0.0.1:9464");
  EXPECT_EQ(r->fail_mode, FailMode::kClosed);
  EXPECT_EQ(r->event_ring_capacity, 1024u);
}

TEST(ArbiterConfig, ArbiterTableAccepted) {
  const auto r = ParseConfigToml("[arbiter]\nslice = \"7ms\"\n", ArbiterConfig{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->slice, std::chrono::milliseconds(7));
}

struct BadValue {
  const char* toml;
  const char* key;
};

class ArbiterConfigBad : public ::testing::TestWithParam<BadValue> {};

TEST_P(ArbiterConfigBad, ErrorNamesTheKey) {
  const auto r = ParseConfigToml(GetParam().toml, ArbiterConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(std::string("'") + GetParam().key + "'"), std::string::npos) << r.status().message();
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
                      BadValue{"slice = 3.5", "slice"},
                      // A decimal integer for a mode is refused (660 is not 0o660).
                      BadValue{"socket_mode = 660", "socket_mode"},
                      BadValue{"control_socket_mode = 0x1b0", "control_socket_mode"},
                      BadValue{"event_ring_mode = 0o1777", "event_ring_mode"},
                      BadValue{"event_ring_mode = \"rw\"", "event_ring_mode"},
                      BadValue{"event_ring_group = \"wheel\"", "event_ring_group"},
                      BadValue{"metrics_allow = \"10.0.0.0/33\"", "metrics_allow"},
                      BadValue{"metrics_allow = [\"example.com\"]", "metrics_allow"},
                      BadValue{"metrics_max_connections = 0", "metrics_max_connections"},
                      BadValue{"metrics = \"unix:\"", "metrics"},
                      BadValue{"[other]\nx = 1", "other"},
                      BadValue{"[arbiter]\n[arbiter.sub]\nx = 1", "sub"}));

// Issue 16 item 12: toml++ reads 0o660 as the number 432; it used to be turned back into the
// text "432" and read as octal, mode 0432 (others could connect). Every mode key, both forms.
TEST(ArbiterConfig, TomlModesMeanWhatTheySay) {
  const auto r = ParseConfigToml(R"(
socket_mode = 0o660
control_socket_mode = 0o640
metrics_socket_mode = 0o660
event_ring_mode = 0o640
)",
                                         ArbiterConfig{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->socket_mode, 0660u) << std::oct << r->socket_mode;
  EXPECT_EQ(r->control_socket_mode, 0640u) << std::oct << r->control_socket_mode;
  EXPECT_EQ(r->metrics_address.socket_mode, 0660u);
  EXPECT_EQ(r->event_ring_mode, 0640u) << std::oct << r->event_ring_mode;
  for (const char* text : {"\"0660\"", "\"660\"", "\"0o660\""}) {
    const auto s = ParseConfigToml(std::string("socket_mode = ") + text, ArbiterConfig{});
    ASSERT_TRUE(s.ok()) << text << ": " << s.status().message();
    EXPECT_EQ(s->socket_mode, 0660u) << text;
  }
  const auto decimal = ParseConfigToml("socket_mode = 660", ArbiterConfig{});
  ASSERT_FALSE(decimal.ok());
  EXPECT_NE(decimal.status().message().find("0o660"), std::string::npos) << decimal.status().message();
}

// Issue 16 item 13: with an [arbiter] table, top-level keys used to be skipped silently
// (allowed_uids and socket_mode among them). Now they are errors naming the key and its line,
// and the file's name through --config.
TEST(ArbiterConfig, KeysOutsideTheArbiterTableAreErrors) {
  const auto r = ParseConfigToml("allowed_uids = [1000]\nsocket_mode = \"0600\"\n"
                                         "[arbiter]\nslice = \"7ms\"\n",
                                         ArbiterConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'allowed_uids' (line 1)"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("[arbiter]"), std::string::npos) << r.status().message();
  const auto table = ParseConfigToml("[arbiter]\nslice = \"7ms\"\n[metrics]\nport = 1\n",
                                             ArbiterConfig{});
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("'metrics' (line 3)"), std::string::npos) << table.status().message();
  const auto not_table = ParseConfigToml("arbiter = 1\n", ArbiterConfig{});
  ASSERT_FALSE(not_table.ok());
  EXPECT_NE(not_table.status().message().find("'arbiter'"), std::string::npos) << not_table.status().message();

  const std::string path = "/tmp/gshare-arbiter-config-top-" + std::to_string(::getpid()) + ".toml";
  {
    std::ofstream out(path);
    out << "allowed_uids = [1000]\n[arbiter]\nslice = \"7ms\"\n";
  }
  const auto file = Parse({"--config", path});
  std::remove(path.c_str());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("'allowed_uids'"), std::string::npos) << file.status().message();
  EXPECT_NE(file.status().message().find(path), std::string::npos) << file.status().message();
}

// The shipped example (packaging/arbiter.toml) parses, and says what it means.
TEST(ArbiterConfig, ShippedExampleParses) {
  const auto r = Parse({"--config", EXAMPLE_CONFIG});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.socket_path, "/run/gshare/arbiter.sock");
  EXPECT_EQ(r->config.metrics_address.address, "127.0.0.1:9464");
  EXPECT_EQ(r->config.event_ring_path, "/run/gshare-operator/events");
  EXPECT_EQ(r->config.event_ring_mode, 0600u);
}

// Issue 16 item 14/15 defaults: the ring is owner-only, metrics connections are capped.
TEST(ArbiterConfig, ExposureDefaults) {
  const auto r = Parse({});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.event_ring_mode, 0600u);
  EXPECT_FALSE(r->config.event_ring_gid.has_value());
  EXPECT_TRUE(r->config.metrics_address.empty());
  EXPECT_EQ(r->config.metrics_address.max_connections, 8u);
  EXPECT_EQ(r->config.metrics_address.socket_mode, 0600u);
  const auto g = Parse({"--event-ring-group", "4242", "--event-ring-mode", "0640"});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->config.event_ring_gid, std::optional<gid_t>(4242));
  EXPECT_EQ(g->config.event_ring_mode, 0640u);
}

// Issue 16 item 15: a non-loopback metrics bind needs an explicit allow-list (or "any").
TEST(ArbiterConfig, NonLoopbackMetricsNeedAnAllowList) {
  for (const char* address : {"0.0.0.0:9464", "10.1.2.3:9464", "[::]:9464", "node1:9464"}) {
    const auto r = Parse({"--metrics", address});
    ASSERT_FALSE(r.ok()) << address;
    EXPECT_NE(r.status().message().find("metrics_allow"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("loopback"), std::string::npos) << r.status().message();
    EXPECT_TRUE(Parse({"--metrics", address, "--metrics-allow", "10.0.0.0/8,::1"}).ok()) << address;
    EXPECT_TRUE(Parse({"--metrics", address, "--metrics-allow", "any"}).ok()) << address;
  }
  for (const char* address : {"127.0.0.1:9464", "127.0.0.2:1", "localhost:9464", "[::1]:9464",
                              "unix:/run/gshare/metrics.sock"})
    EXPECT_TRUE(Parse({"--metrics", address}).ok()) << address << ": "
                                                     << Parse({"--metrics", address}).status().message();
  const auto list = ParseConfigToml("metrics_allow = [\"10.0.0.0/8\", \"fd00::/8\"]",
                                            ArbiterConfig{});
  ASSERT_TRUE(list.ok()) << list.status().message();
  const auto& allow = list->metrics_address.allow;
  ASSERT_EQ(allow.size(), 2u);
  EXPECT_TRUE(allow[0].Contains("10.200.3.4"));
  EXPECT_TRUE(allow[0].Contains("::ffff:10.200.3.4"));  // IPv4-mapped, as a dual-stack peer
  EXPECT_FALSE(allow[0].Contains("11.0.0.1"));
  EXPECT_FALSE(allow[0].Contains("fd00::1"));
  EXPECT_TRUE(allow[1].Contains("fd12::1"));
  EXPECT_FALSE(allow[1].Contains("fe80::1"));
  EXPECT_FALSE(allow[1].Contains("10.200.3.4"));
}

TEST(ArbiterConfig, SyntaxErrorSaysLine) {
  const auto r = ParseConfigToml("slice = \n", ArbiterConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 1"), std::string::npos) << r.status().message();
}

TEST(ArbiterConfig, FlagsOverrideFile) {
  const std::string path = "/tmp/gshare-arbiter-config-" + std::to_string(::getpid()) + ".toml";
  {
    std::ofstream out(path);
    out << "slice = \"5ms\"\npolicy = \"fifo\"\n";
  }
  const auto r = Parse({"--config", path, "--slice", "9ms"});
  std::remove(path.c_str());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->config.slice, std::chrono::milliseconds(9));
  EXPECT_EQ(r->config.policy, "fifo");
}

TEST(ArbiterConfig, BadFlagNamesTheFlag) {
  const auto r = Parse({"--preempt-grace", "soon"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--preempt-grace"), std::string::npos) << r.status().message();
  const auto missing = Parse({"--config", "/nonexistent/gshare.toml"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--config"), std::string::npos) << missing.status().message();
  const auto unknown = Parse({"--bogus", "1"});
  EXPECT_FALSE(unknown.ok());
}

// --help: every flag has a placeholder and a description of its own that names its default
// (the texts live next to each key's setter in config.cc).
TEST(ArbiterConfig, HelpDescribesEveryFlag) {
  const auto r = Parse({"--help"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->help.has_value());
  const std::string& help = *r->help;
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

// corun_gpus naming a GPU the arbiter does not manage (issue 20, "Bad input"): Create fails
// with an error naming the setting and the GPU, not an arbiter that silently co-runs nowhere.
TEST(ArbiterConfig, CorunGpusNamingAnUnmanagedGpuRefusedAtCreate) {
  ArbiterConfig c;
  c.socket_path = "/tmp/gshare-arb-cfg-" + std::to_string(::getpid()) + ".sock";
  c.libcuda = "/nonexistent/libcuda.so.1";
  c.control_socket = "off";
  c.corun.gpus = {0, 1};  // ordinal 1 is not among the managed GPUs (0 and 2)
  auto a = Arbiter::Create(c, {{0, 1ull << 30}, {2, 1ull << 30}}, false);
  ASSERT_FALSE(a.ok()) << "an arbiter was made with corun_gpus naming GPU 1";
  EXPECT_EQ(a.status().code(), shm::StatusCode::kInvalidArgument) << a.status().ToString();
  EXPECT_NE(a.status().message().find("corun_gpus"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("GPU 1 is not managed"), std::string::npos)
      << a.status().message();
}

}  // namespace
}  // namespace gshare::arbiter
