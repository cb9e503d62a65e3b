// The shim's environment parsing: sizes with units, malformed values named in the error.
#include <map>
#include <utility>
#include <vector>
#include <string>

#include <gtest/gtest.h>

#include "runtime/config.h"

namespace gshare::preload {
namespace {

Config Parse(const std::map<std::string, std::string>& env, int pid = 1234) {
  return ParseConfig(
      [](const char* name, void* ctx) -> const char* {
        const auto& m = *static_cast<const std::map<std::string, std::string>*>(ctx);
        const auto it = m.find(name);
        return it == m.end() ? nullptr : it->second.c_str();
      },
      const_cast<std::map<std::string, std::string>*>(&env), pid);
}

TEST(Config, EmptyEnvironmentMeansWholeDevice) {
  const Config c = Parse({});
  EXPECT_TRUE(c.error.ok());
  EXPECT_FALSE(c.vgpu_memory_bytes.has_value());
  EXPECT_TRUE(c.control_socket.empty());
}

TEST(Config, SizesWithUnits) {
  EXPECT_EQ(Parse({{"GSHARE_VGPU_MEMORY", "1536MiB"}}).vgpu_memory_bytes, 1536ull << 20);
  EXPECT_EQ(Parse({{"GSHARE_VGPU_MEMORY", "2GiB"}}).vgpu_memory_bytes, 2ull << 30);
  const Config c = Parse({{"GSHARE_FUNCTION", "resnet"}, {"GSHARE_SLO_MS", "250"}});
  EXPECT_EQ(c.function_name, "resnet");
  EXPECT_EQ(c.slo_ms, 250u);
}

TEST(Config, MalformedValuesAreNamed) {
  for (const char* bad : {"12XB", "lots", "-1GiB", "0", "1.5.2MiB"}) {
    const Config c = Parse({{"GSHARE_VGPU_MEMORY", bad}});
    EXPECT_NE(c.error.message().find("GSHARE_VGPU_MEMORY"), std::string::npos)
        << bad << ": " << c.error.message();
    EXPECT_FALSE(c.vgpu_memory_bytes.has_value()) << bad;
  }
  for (const char* bad : {"abc", "0", "12ms", "-5"}) {
    const Config c = Parse({{"GSHARE_SLO_MS", bad}});
    EXPECT_NE(c.error.message().find("GSHARE_SLO_MS"), std::string::npos) << bad;
  }
  const Config both = Parse({{"GSHARE_VGPU_MEMORY", "x"}, {"GSHARE_SLO_MS", "y"}});
  EXPECT_NE(both.error.message().find("GSHARE_VGPU_MEMORY"), std::string::npos);
  EXPECT_NE(both.error.message().find("GSHARE_SLO_MS"), std::string::npos);
}

// A malformed variable is kInvalidArgument naming it; several are one message, in parse order.
TEST(Config, ErrorsAreInvalidArgumentsOneClausePerVariable) {
  const Config one = Parse({{"GSHARE_SLO_MS", "abc"}});
  EXPECT_EQ(one.error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(one.error.message(), "GSHARE_SLO_MS='abc' is not a positive whole number of milliseconds");
  const Config two = Parse({{"GSHARE_ARBITER_FAIL", "x"}, {"GSHARE_PREPIN", "2"}});
  EXPECT_EQ(two.error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(two.error.message(),
            "GSHARE_ARBITER_FAIL='x' must be 'open' or 'closed'; GSHARE_PREPIN='2' must be 0 or 1");
}

TEST(Config, LeaseAndKeptMemory) {
  const Config defaults = Parse({});
  EXPECT_TRUE(defaults.lease);
  EXPECT_EQ(defaults.keep_freed_bytes, 256ull << 20);
  EXPECT_FALSE(Parse({{"GSHARE_LEASE", "0"}}).lease);
  EXPECT_TRUE(Parse({{"GSHARE_LEASE", "1"}}).lease);
  EXPECT_NE(Parse({{"GSHARE_LEASE", "on"}}).error.message().find("GSHARE_LEASE='on'"), std::string::npos);
  EXPECT_EQ(Parse({{"GSHARE_KEEP_FREED", "0"}}).keep_freed_bytes, 0u);
  EXPECT_EQ(Parse({{"GSHARE_KEEP_FREED", "64MiB"}}).keep_freed_bytes, 64ull << 20);
  EXPECT_NE(Parse({{"GSHARE_KEEP_FREED", "lots"}}).error.message().find("GSHARE_KEEP_FREED"),
            std::string::npos);
}

TEST(Config, DeviceOrdinal) {
  EXPECT_EQ(Parse({}).device, 0);
  EXPECT_EQ(Parse({{"GSHARE_DEVICE", "3"}}).device, 3);
  for (const char* bad : {"-1", "gpu1", "1.5", "99999999999"}) {
    const Config c = Parse({{"GSHARE_DEVICE", bad}});
    EXPECT_NE(c.error.message().find(std::string("GSHARE_DEVICE='") + bad + "'"), std::string::npos) << bad;
    EXPECT_EQ(c.device, 0) << bad;
  }
}

// GSHARE_FUNCTION is sent at registration, which takes printable ASCII up to 127 bytes: any
// other value is an error naming the variable (the shim then fails cuInit), never a name the
// arbiter refuses later (which left the shim running stand-alone, unscheduled).
TEST(Config, FunctionNameMustBePrintableAndShort) {
  EXPECT_TRUE(Parse({{"GSHARE_FUNCTION", "resnet-50 v2 (int8)"}}).error.ok());
  const std::string longest(127, 'f');
  const Config ok = Parse({{"GSHARE_FUNCTION", longest}});
  EXPECT_TRUE(ok.error.ok()) << ok.error.message();
  EXPECT_EQ(ok.function_name, longest);
  for (const std::string& bad : {std::string("res\tnet"), std::string("line\nbreak"),
                                std::string("\x1b[31mred"), std::string("del\x7f"),
                                std::string("caf\xc3\xa9"), std::string(128, 'f')}) {
    const Config c = Parse({{"GSHARE_FUNCTION", bad}});
    EXPECT_NE(c.error.message().find("GSHARE_FUNCTION"), std::string::npos) << c.error.message();
    EXPECT_TRUE(c.function_name.empty()) << c.function_name;
    // The message never carries the raw control byte into the log.
    for (const char ch : c.error.message()) EXPECT_TRUE(ch >= 0x20 && ch <= 0x7e) << c.error.message();
  }
  EXPECT_NE(Parse({{"GSHARE_FUNCTION", "a\tb"}}).error.message().find("0x09 at offset 1"), std::string::npos);
  EXPECT_NE(Parse({{"GSHARE_FUNCTION", std::string(200, 'x')}}).error.message().find("200 bytes"),
            std::string::npos);
}

// GSHARE_REGISTER_RETRY: the back-off's cap for a first registration that found no arbiter.
TEST(Config, RegisterRetry) {
  EXPECT_EQ(Parse({}).register_retry_max_ns, 5'000'000'000u);
  EXPECT_EQ(Parse({{"GSHARE_REGISTER_RETRY", "500ms"}}).register_retry_max_ns, 500'000'000u);
  EXPECT_EQ(Parse({{"GSHARE_REGISTER_RETRY", "0"}}).register_retry_max_ns, 0u);
  EXPECT_EQ(Parse({{"GSHARE_REGISTER_RETRY", "off"}}).register_retry_max_ns, 0u);
  for (const char* bad : {"5", "soon", "2h"}) {
    const Config c = Parse({{"GSHARE_REGISTER_RETRY", bad}});
    EXPECT_NE(c.error.message().find("GSHARE_REGISTER_RETRY"), std::string::npos) << bad << ": " << c.error.message();
  }
}

// GSHARE_SHARE_QUERY: how long cuInit waits for the arbiter's MPS share; bad values name it.
TEST(Config, ShareQuery) {
  EXPECT_EQ(Parse({}).share_query_ns, 200'000'000u);
  EXPECT_EQ(Parse({{"GSHARE_SHARE_QUERY", "1s"}}).share_query_ns, 1'000'000'000u);
  EXPECT_EQ(Parse({{"GSHARE_SHARE_QUERY", "0"}}).share_query_ns, 0u);
  EXPECT_EQ(Parse({{"GSHARE_SHARE_QUERY", "off"}}).share_query_ns, 0u);
  for (const char* bad : {"5", "soon", "6s", "-1s"}) {
    const Config c = Parse({{"GSHARE_SHARE_QUERY", bad}});
    EXPECT_NE(c.error.message().find("GSHARE_SHARE_QUERY"), std::string::npos)
        << bad << ": " << c.error.message();
  }
}

// GSHARE_POD_NAME / GSHARE_POD_NAMESPACE (Kubernetes' downward API): valid values are kept; a
// malformed one is dropped with a warning naming the variable, never an error (it is a label:
// the process must run on).
// GSHARE_CORUN_DEMAND: what the function's kernels use alone, for co-running (percentages);
// malformed values fail the configuration naming the variable and the item.
TEST(Config, CorunDemand) {
  Config c = Parse({{"GSHARE_CORUN_DEMAND", "compute=20,bandwidth=5"}});
  EXPECT_TRUE(c.error.ok()) << c.error.message();
  EXPECT_EQ(c.compute_demand_pct, 20);
  EXPECT_EQ(c.bandwidth_demand_pct, 5);
  c = Parse({{"GSHARE_CORUN_DEMAND", "compute=100"}});
  EXPECT_TRUE(c.error.ok()) << c.error.message();
  EXPECT_EQ(c.compute_demand_pct, 100);
  EXPECT_EQ(c.bandwidth_demand_pct, 0);
  EXPECT_EQ(Parse({}).compute_demand_pct, 0);  // unknown: never co-run
  for (const char* bad : {"compute=0", "compute=101", "compute=", "compute", "sm=20",
                          "compute=20,", "compute=2x", "compute=-1", ",bandwidth=3"}) {
    c = Parse({{"GSHARE_CORUN_DEMAND", bad}});
    EXPECT_NE(c.error.message().find("GSHARE_CORUN_DEMAND"), std::string::npos) << bad << ": " << c.error.message();
    EXPECT_EQ(c.compute_demand_pct, 0) << bad;
  }
}

TEST(Config, PodNameAndNamespace) {
  const std::string longest_name = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                                   std::string(63, 'c') + "." + std::string(61, 'd');
  ASSERT_EQ(longest_name.size(), 253u);
  for (const auto& [name, ns] : {std::pair<std::string, std::string>{"resnet-7d4b9c-x2k4p", "team-a"},
                                 {longest_name, std::string(63, 'n')},
                                 {"a.b.c", "0"}}) {
    const Config c = Parse({{"GSHARE_POD_NAME", name}, {"GSHARE_POD_NAMESPACE", ns}});
    EXPECT_TRUE(c.error.ok()) << c.error.message();
    EXPECT_TRUE(c.warnings.empty()) << c.warnings;
    EXPECT_EQ(c.pod_name, name);
    EXPECT_EQ(c.pod_namespace, ns);
  }
  const std::vector<std::string> bad_names = {
      longest_name + "e", "Resnet", "res_net", "-resnet", "resnet-", "a..b", ".a", "a.",
      "x\"} 1\nevil_metric 1", "tab\there", "caf\xc3\xa9", "a/b"};
  for (const std::string& bad : bad_names) {
    const Config c = Parse({{"GSHARE_POD_NAME", bad}, {"GSHARE_POD_NAMESPACE", "ok"}});
    EXPECT_TRUE(c.error.ok()) << c.error.message();
    EXPECT_NE(c.warnings.find("GSHARE_POD_NAME"), std::string::npos) << bad << ": " << c.warnings;
    EXPECT_TRUE(c.pod_name.empty()) << c.pod_name;
    EXPECT_EQ(c.pod_namespace, "ok");
    for (const char ch : c.warnings) EXPECT_TRUE(ch >= 0x20 && ch <= 0x7e) << c.warnings;
  }
  for (const std::string& bad : {std::string(64, 'n'), std::string("a.b"), std::string("Team"),
                                 std::string("ns\"x")}) {
    const Config c = Parse({{"GSHARE_POD_NAMESPACE", bad}});
    EXPECT_TRUE(c.error.ok()) << c.error.message();
    EXPECT_NE(c.warnings.find("GSHARE_POD_NAMESPACE"), std::string::npos) << bad << ": " << c.warnings;
    EXPECT_TRUE(c.pod_namespace.empty()) << c.pod_namespace;
  }
  EXPECT_NE(Parse({{"GSHARE_POD_NAME", std::string(300, 'a')}}).warnings.find("300 bytes"),
            std::string::npos);
}

TEST(Config, ControlSocketExpandsPid) {
  const Config c = Parse({{"GSHARE_CONTROL_SOCKET", "/tmp/gshare-%p.sock"}}, 42);
  EXPECT_EQ(c.control_socket, "/tmp/gshare-42.sock");
  EXPECT_TRUE(c.control_socket_per_pid);
  EXPECT_FALSE(Parse({{"GSHARE_CONTROL_SOCKET", "/tmp/x"}}).control_socket_per_pid);
}

}  // namespace
}  // namespace gshare::preload
