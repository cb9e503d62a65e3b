// gshare-device-plugin's logic without sockets: configuration keys and files, the devices
// derived from the arbiter's status, preferred allocations, grants, the CDI spec's edits and the
// kubelet link's decisions.
#include <fstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "allocator.h"
#include "cdi_edits.h"
#include "config.h"
#include "inventory.h"
#include "kubelet_link.h"

namespace gshare::deviceplugin {
namespace {

using nlohmann::json;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

json Status(std::vector<std::tuple<uint32_t, uint64_t, bool>> gpus) {
  json list = json::array();
  for (const auto& [g, usable, drained] : gpus)
    list.push_back({{"gpu", g}, {"total_bytes", usable}, {"usable_bytes", usable}, {"drained", drained}});
  return {{"ok", true}, {"gpus", list}};
}

size_t Healthy(const Snapshot& s) {
  size_t n = 0;
  for (const auto& d : s.Devices()) n += d.healthy ? 1 : 0;
  return n;
}

TEST(PluginConfig, KeysParseAndBadValuesNameTheKey) {
  PluginConfig c;
  EXPECT_TRUE(SetKey(c, "unit", "512MiB").ok());
  EXPECT_EQ(c.unit_bytes, 512 * kMiB);
  EXPECT_TRUE(SetKey(c, "overcommit", "2.5").ok());
  EXPECT_DOUBLE_EQ(c.overcommit, 2.5);
  EXPECT_TRUE(SetKey(c, "device_list_strategy", "cdi").ok());
  EXPECT_EQ(c.strategy, DeviceListStrategy::kCdi);
  auto s = SetKey(c, "unit", "1000KiB");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unit: '1000KiB' must be a whole number of MiB"), std::string::npos)
      << s.message();
  EXPECT_NE(SetKey(c, "overcommit", "0.5").message().find("out of range"), std::string::npos);
  EXPECT_NE(SetKey(c, "overcommit", "lots").message().find("not a number"), std::string::npos);
  EXPECT_NE(SetKey(c, "resource_name", "vgpu").message().find("not DOMAIN/NAME"), std::string::npos);
  EXPECT_NE(SetKey(c, "resource_name", "kubernetes.io/vgpu").message().find("reserved"),
            std::string::npos);
  EXPECT_NE(SetKey(c, "plugin_socket", "a/b.sock").message().find("file name"), std::string::npos);
  EXPECT_NE(SetKey(c, "kubelet_socket", "").message().find("absolute"), std::string::npos);
  EXPECT_NE(SetKey(c, "cdi_device", "gshare.io/vgpu").message().find("CDI device id"),
            std::string::npos);
  EXPECT_NE(SetKey(c, "poll_interval", "5").message().find("poll_interval"), std::string::npos);
  EXPECT_NE(SetKey(c, "colour", "red").message().find("unknown key 'colour'"), std::string::npos);
  EXPECT_EQ(c.unit_bytes, 512 * kMiB) << "a refused value leaves the key as it was";
}

// Every refused value is kInvalidArgument, its message the key and the value's problem.
TEST(PluginConfig, RefusedValuesAreInvalidArgumentsWithTheKeyInTheMessage) {
  PluginConfig c;
  const std::pair<std::pair<const char*, const char*>, const char*> cases[] = {
      {{"overcommit", "0.5"}, "overcommit: '0.5' is out of range (1 to 64)"},
      {{"plugin_socket", "kubelet.sock"}, "plugin_socket: 'kubelet.sock' is kubelet's own socket"},
      {{"control_socket", ""}, "control_socket: must not be empty"},
      {{"poll_interval", "5ms"}, "poll_interval: '5ms' is out of range (10 ms to 600000 ms)"},
      {{"resource_name", "vgpu"},
       "resource_name: 'vgpu' is not DOMAIN/NAME (e.g. gshare.io/vgpu-memory)"},
      {{"device_list_strategy", "all"}, "device_list_strategy: 'all' is not one of both, cdi, env"},
      {{"colour", "red"}, "unknown key 'colour'"},
  };
  for (const auto& [kv, message] : cases) {
    const shm::Status s = SetKey(c, kv.first, kv.second);
    EXPECT_EQ(s.code(), shm::StatusCode::kInvalidArgument) << kv.first;
    EXPECT_EQ(s.message(), message);
  }
}

class ConfigFile : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    path_ = ::testing::TempDir() + "dp-config-" + std::to_string(::getpid()) + ".toml";
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(ConfigFile, ReadsTheDevicePluginTable) {
  PluginConfig c;
  auto s = LoadConfigFile(c, Write("[device_plugin]\nunit = \"1GiB\"\novercommit = 2\n"
                                   "kubelet_socket = \"/tmp/k/kubelet.sock\"\n"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.unit_bytes, kGiB);
  EXPECT_DOUBLE_EQ(c.overcommit, 2.0);
  EXPECT_EQ(c.socket_dir(), "/tmp/k");
  EXPECT_EQ(c.plugin_socket_path(), "/tmp/k/gshare.sock");
}

TEST_F(ConfigFile, ErrorsNameTheFileTheLineAndTheKey) {
  PluginConfig c;
  auto s = LoadConfigFile(c, Write("[device_plugin]\nunit = \"1GiB\"\novercommit = \"x\"\n"));
  EXPECT_NE(s.message().find(path_ + ": line 3: overcommit: 'x' is not a number"), std::string::npos)
      << s.message();
  s = LoadConfigFile(c, Write("unit = \"1GiB\"\n"));
  EXPECT_NE(s.message().find("line 1: 'unit' outside the [device_plugin] table"), std::string::npos)
      << s.message();
  s = LoadConfigFile(c, Write("[device_plugin]\nunit = [1, 2]\n"));
  EXPECT_NE(s.message().find("line 2: unit: expected a string or a number"), std::string::npos)
      << s.message();
  s = LoadConfigFile(c, Write("[device_plugin\n"));
  EXPECT_NE(s.message().find(path_ + ":"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("(line 1)"), std::string::npos) << s.message();
  s = LoadConfigFile(c, "/nonexistent/gshare.toml");
  EXPECT_NE(s.message().find("/nonexistent/gshare.toml"), std::string::npos) << s.message();
}

TEST_F(ConfigFile, DescribeWritesEveryKeyAndReadsBackTheSame) {
  PluginConfig c;
  ASSERT_TRUE(SetKey(c, "unit", "1GiB").ok());
  ASSERT_TRUE(SetKey(c, "overcommit", "2.5").ok());
  ASSERT_TRUE(SetKey(c, "device_list_strategy", "env").ok());
  ASSERT_TRUE(SetKey(c, "poll_interval", "1.5s").ok());
  const std::string text = Describe(c);
  for (const auto& k : ConfigKeys())
    EXPECT_NE(text.find("\n" + k.key + " = "), std::string::npos) << k.key;
  PluginConfig back;
  ASSERT_TRUE(LoadConfigFile(back, Write(text)).ok()) << text;
  EXPECT_EQ(Describe(back), text);
  EXPECT_EQ(back.unit_bytes, kGiB);
  EXPECT_EQ(back.poll_interval.count(), 1500);
  EXPECT_EQ(back.strategy, DeviceListStrategy::kEnv);
}

TEST(DeviceIds, RoundTripAndRefuseEverythingElse) {
  EXPECT_EQ(DeviceId(3, 17), "gpu3-17");
  const auto ref = ParseDeviceId("gpu3-17");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->ordinal, 3u);
  EXPECT_EQ(ref->unit, 17u);
  for (const char* bad : {"", "gpu", "gpu3", "gpu-1", "gpu3-", "gpu03-1", "gpu3-01", "gpu3-1x",
                          "GPU3-1", "gpu3-99999999999", "nvidia0"})
    EXPECT_FALSE(ParseDeviceId(bad)) << bad;
}

TEST(Inventory, UnitsPerGpuFollowUsableMemoryUnitAndOvercommit) {
  Inventory inv(256 * kMiB, 1.0);
  EXPECT_TRUE(inv.Update(Status({{0, kGiB, false}, {1, kGiB + 255 * kMiB, false}})));
  const Snapshot& s = inv.snapshot();
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus.at(0).units, 4u);
  EXPECT_EQ(s.gpus.at(1).units, 4u) << "a partial unit is not advertised";
  EXPECT_EQ(Healthy(s), 8u);
  EXPECT_EQ(s.Devices().front().id, "gpu0-0");
  EXPECT_EQ(s.Devices().back().id, "gpu1-3");
  EXPECT_FALSE(inv.Update(Status({{0, kGiB, false}, {1, kGiB + 255 * kMiB, false}})))
      << "the same state is not a change";

  Inventory over(256 * kMiB, 2.5);
  (void)over.Update(Status({{0, kGiB, false}}));
  EXPECT_EQ(over.snapshot().gpus.at(0).units, 10u);
  EXPECT_EQ(over.snapshot().LargestHealthyGpuBytes(), kGiB) << "overcommit never grows one vGPU";
}

TEST(Inventory, DrainedLostAndUnreachableGpusAreUnhealthy) {
  Inventory inv(256 * kMiB, 1.0);
  (void)inv.Update(Status({{0, kGiB, false}, {1, kGiB, false}}));
  EXPECT_TRUE(inv.Update(Status({{0, kGiB, false}, {1, kGiB, true}})));
  EXPECT_EQ(Healthy(inv.snapshot()), 4u);
  EXPECT_FALSE(inv.snapshot().Devices()[4].healthy);
  EXPECT_TRUE(inv.Update(Status({{0, kGiB, false}, {1, kGiB, false}})));
  EXPECT_EQ(Healthy(inv.snapshot()), 8u);
  // GPU 1 is no longer managed: its devices stay listed, unhealthy.
  EXPECT_TRUE(inv.Update(Status({{0, kGiB, false}})));
  EXPECT_EQ(inv.snapshot().Devices().size(), 8u);
  EXPECT_EQ(Healthy(inv.snapshot()), 4u);
  EXPECT_FALSE(inv.snapshot().gpus.at(1).present);
  // The arbiter unreachable: everything unhealthy, the reason kept.
  EXPECT_TRUE(inv.Update(shm::Status(shm::StatusCode::kUnavailable, "gshare-arbiter is not running at /x")));
  EXPECT_EQ(Healthy(inv.snapshot()), 0u);
  EXPECT_EQ(inv.snapshot().problem, "gshare-arbiter is not running at /x");
  EXPECT_EQ(inv.snapshot().LargestHealthyGpuBytes(), 0u);
  EXPECT_TRUE(inv.Update(Status({{0, kGiB, false}, {1, kGiB, false}})));
  EXPECT_EQ(Healthy(inv.snapshot()), 8u);
}

TEST(Inventory, MalformedOrRefusedRepliesCountAsUnreachable) {
  Inventory inv(256 * kMiB, 1.0);
  (void)inv.Update(Status({{0, kGiB, false}}));
  EXPECT_TRUE(inv.Update(json{{"ok", false}, {"error", "uid 1000 is not authorised"}}));
  EXPECT_NE(inv.snapshot().problem.find("refused the status request: uid 1000 is not authorised"),
            std::string::npos);
  (void)inv.Update(Status({{0, kGiB, false}}));
  EXPECT_TRUE(inv.Update(json{{"ok", true}}));
  EXPECT_NE(inv.snapshot().problem.find("no \"gpus\" list"), std::string::npos);
  (void)inv.Update(Status({{0, kGiB, false}}));
  EXPECT_TRUE(inv.Update(json{{"ok", true}, {"gpus", {{{"gpu", -1}, {"usable_bytes", 1}, {"drained", false}}}}}));
  EXPECT_NE(inv.snapshot().problem.find("without gpu, usable_bytes or drained"), std::string::npos);
  EXPECT_EQ(Healthy(inv.snapshot()), 0u);
}

Snapshot TwoGpus(uint32_t units0, uint32_t units1) {
  Inventory inv(256 * kMiB, 1.0);
  (void)inv.Update(Status({{0, units0 * 256 * kMiB, false}, {1, units1 * 256 * kMiB, false}}));
  return inv.snapshot();
}

std::vector<std::string> All(const Snapshot& s) {
  std::vector<std::string> ids;
  for (const auto& d : s.Devices()) ids.push_back(d.id);
  return ids;
}

TEST(PreferredAllocation, TakesTheSmallestGpuThatHoldsTheWholeRequest) {
  const Snapshot s = TwoGpus(8, 4);
  auto r = PreferredAllocation(s, All(s), {}, 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (std::vector<std::string>{"gpu1-0", "gpu1-1", "gpu1-2"}));
  r = PreferredAllocation(s, All(s), {}, 6);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 6u);
  for (const auto& id : *r) EXPECT_EQ(id.rfind("gpu0-", 0), 0u) << id;
  // Nothing holds 10 on one GPU: the largest first, then the rest.
  r = PreferredAllocation(s, All(s), {}, 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 10u);
  EXPECT_EQ(r->front(), "gpu0-0");
  EXPECT_EQ(r->back(), "gpu1-1");
}

TEST(PreferredAllocation, KeepsWhatMustBeIncludedAndSkipsUnknownIds) {
  const Snapshot s = TwoGpus(8, 4);
  auto r = PreferredAllocation(s, {"gpu0-1", "gpu0-2", "gpu1-0", "gpu7-0", "junk"}, {"gpu0-5"}, 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (std::vector<std::string>{"gpu0-5", "gpu0-1", "gpu0-2"}));
  r = PreferredAllocation(s, {"gpu0-1"}, {}, 2);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("only 1 of this plugin's devices offered"), std::string::npos);
  r = PreferredAllocation(s, All(s), {"gpu0-1", "gpu0-2"}, 1);
  EXPECT_NE(r.status().message().find("smaller than the 2 devices"), std::string::npos);
}

TEST(Grant, UnitsBecomeTheQuotaAndImpossibleRequestsAreRefused) {
  const Snapshot s = TwoGpus(4, 4);
  auto g = GrantFor(s, {"gpu0-0", "gpu1-2", "gpu1-3"});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->quota_bytes, 768 * kMiB);
  EXPECT_EQ(QuotaText(g->quota_bytes), "768MiB");
  g = GrantFor(s, {"gpu0-0", "gpu0-1", "gpu0-2", "gpu0-3", "gpu1-0"});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("5 units of 256 MiB = 1.25 GiB is more than any GPU"),
            std::string::npos)
      << g.status().message();
  EXPECT_NE(g.status().message().find("largest healthy: 1 GiB"), std::string::npos);
  EXPECT_NE(GrantFor(s, {}).status().message().find("no device ids"), std::string::npos);
  EXPECT_NE(GrantFor(s, {"gpu0-0", "gpu0-0"}).status().message().find("'gpu0-0' is requested twice"),
            std::string::npos);
  EXPECT_NE(GrantFor(s, {"gpu0-9"}).status().message().find("'gpu0-9' is not one of this plugin's"),
            std::string::npos);
  EXPECT_NE(GrantFor(s, {"nvidia0"}).status().message().find("not a gshare device id"),
            std::string::npos);
}

TEST(Grant, UnknownArbiterStateIsUnavailable) {
  Inventory inv(256 * kMiB, 1.0);
  (void)inv.Update(Status({{0, kGiB, false}}));
  (void)inv.Update(shm::Status(shm::StatusCode::kUnavailable, "gshare-arbiter is not running at /c"));
  const auto g = GrantFor(inv.snapshot(), {"gpu0-0"});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), shm::StatusCode::kUnavailable);
  EXPECT_NE(g.status().message().find("not running at /c"), std::string::npos);
}

class CdiSpec : public ConfigFile {};

const char* kSpec = R"({
  "cdiVersion": "0.5.0", "kind": "gshare.io/vgpu",
  "containerEdits": {"env": ["LD_PRELOAD=/opt/gshare/lib/libgshare.so"]},
  "devices": [{"name": "vgpu", "containerEdits": {
    "env": ["GSHARE_ARBITER_SOCKET=/run/gshare/arbiter.sock"],
    "mounts": [{"hostPath": "/run/gshare", "containerPath": "/run/gshare", "options": ["ro", "bind"]},
               {"hostPath": "/opt/gshare/libgshare.so", "containerPath": "/opt/gshare/lib/libgshare.so",
                "options": ["ro", "nosuid", "bind"]}]}}]})";

TEST_F(CdiSpec, EditsOfTheDeviceAndTheSpecAreCombined) {
  const auto e = ReadCdiEdits(Write(kSpec), "gshare.io/vgpu=vgpu");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->env.at("LD_PRELOAD"), "/opt/gshare/lib/libgshare.so");
  EXPECT_EQ(e->env.at("GSHARE_ARBITER_SOCKET"), "/run/gshare/arbiter.sock");
  ASSERT_EQ(e->mounts.size(), 2u);
  EXPECT_EQ(e->mounts[1].host_path, "/opt/gshare/libgshare.so");
  EXPECT_TRUE(e->mounts[1].read_only);

  PluginConfig c;
  Grant g{512 * kMiB, 2, {}};
  auto edits = EditsFor(c, g, &*e);
  EXPECT_EQ(edits.envs.at("GSHARE_VGPU_MEMORY"), "512MiB");
  EXPECT_EQ(edits.envs.at("LD_PRELOAD"), "/opt/gshare/lib/libgshare.so");
  EXPECT_EQ(edits.cdi_devices, std::vector<std::string>{"gshare.io/vgpu=vgpu"});
  c.strategy = DeviceListStrategy::kCdi;
  edits = EditsFor(c, g, &*e);
  EXPECT_FALSE(edits.envs.contains("LD_PRELOAD"));
  EXPECT_TRUE(edits.mounts.empty());
  EXPECT_EQ(edits.envs.at("GSHARE_VGPU_MEMORY"), "512MiB");
  c.strategy = DeviceListStrategy::kEnv;
  edits = EditsFor(c, g, &*e);
  EXPECT_TRUE(edits.cdi_devices.empty());
  EXPECT_EQ(edits.mounts.size(), 2u);
}

TEST_F(CdiSpec, ProblemsNameTheFileAndWhatIsWrong) {
  EXPECT_NE(ReadCdiEdits("/nonexistent/gshare.json", "gshare.io/vgpu=vgpu")
                .status().message().find("cannot be read (run gshare-cdi generate)"),
            std::string::npos);
  EXPECT_NE(ReadCdiEdits(Write("{"), "gshare.io/vgpu=vgpu").status().message().find("not a JSON object"),
            std::string::npos);
  EXPECT_NE(ReadCdiEdits(Write(kSpec), "nvidia.com/gpu=all").status().message().find(
                "kind is 'gshare.io/vgpu', not 'nvidia.com/gpu'"),
            std::string::npos);
  EXPECT_NE(ReadCdiEdits(Write(kSpec), "gshare.io/vgpu=other").status().message().find(
                "no device named 'other'"),
            std::string::npos);
  const std::string hooks = R"({"kind":"gshare.io/vgpu","devices":[{"name":"vgpu","containerEdits":
      {"hooks":[{"hookName":"createContainer","path":"/bin/true"}]}}]})";
  EXPECT_NE(ReadCdiEdits(Write(hooks), "gshare.io/vgpu=vgpu").status().message().find("hooks is not supported"),
            std::string::npos);
  const std::string env = R"({"kind":"gshare.io/vgpu","devices":[{"name":"vgpu","containerEdits":{"env":["NOEQUALS"]}}]})";
  EXPECT_NE(ReadCdiEdits(Write(env), "gshare.io/vgpu=vgpu").status().message().find("'NOEQUALS' is not NAME=VALUE"),
            std::string::npos);
}

TEST(KubeletLink, DecisionsFollowWhatIsOnDisk) {
  LinkState none;
  EXPECT_EQ(NextAction({false, 0, 0}, none), LinkAction::kWaitDirectory);
  EXPECT_EQ(NextAction({true, 0, 0}, none), LinkAction::kServe);
  LinkState serving{5, 0};
  EXPECT_EQ(NextAction({true, 0, 5}, serving), LinkAction::kWaitKubelet);
  EXPECT_EQ(NextAction({true, 9, 5}, serving), LinkAction::kRegister);
  LinkState registered{5, 9};
  EXPECT_EQ(NextAction({true, 9, 5}, registered), LinkAction::kNone);
  // kubelet restarted: a new kubelet.sock...
  EXPECT_EQ(NextAction({true, 11, 5}, registered), LinkAction::kRegister);
  // ...and it removed our socket (or something replaced it).
  EXPECT_EQ(NextAction({true, 11, 0}, registered), LinkAction::kServe);
  EXPECT_EQ(NextAction({true, 9, 6}, registered), LinkAction::kServe);
  // The whole directory went away.
  EXPECT_EQ(NextAction({false, 0, 0}, registered), LinkAction::kStopServing);
}

}  // namespace
}  // namespace gshare::deviceplugin
