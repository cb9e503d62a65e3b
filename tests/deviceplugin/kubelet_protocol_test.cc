// gshare-device-plugin as kubelet sees it: the real plugin process, a real gshare-arbiter on
// simulated GPUs (simcuda), and this test playing kubelet over the v1beta1 gRPC protocol on Unix
// sockets: registration, ListAndWatch, GetPreferredAllocation, Allocate; kubelet restarting
// (its directory emptied or recreated), the arbiter restarting or losing a GPU, a drain, and
// requests that are malformed or cannot be served.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <grpcpp/generic/generic_stub.h>

#include "fake_kubelet.h"
#include "gshare/arbiter/control_client.h"
#include "test_util.h"

namespace gshare::deviceplugin::testing {
namespace {

using arbiter::testing::ArbiterProcess;
using arbiter::testing::ExitCode;
using arbiter::testing::ReadFile;
using arbiter::testing::RunTool;
using arbiter::testing::Scaled;
using arbiter::testing::Spawn;
using arbiter::testing::TempDir;
using arbiter::testing::WaitFor;
using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1ull << 20;

// A CDI spec as gshare-cdi generate writes one (the plugin reads its edits for the env strategy).
const char* kCdiSpec = R"({"cdiVersion": "0.5.0", "kind": "gshare.io/vgpu",
  "devices": [{"name": "vgpu", "containerEdits": {
    "env": ["LD_PRELOAD=/opt/gshare/lib/libgshare.so", "GSHARE_ARBITER_SOCKET=/run/gshare/arbiter.sock"],
    "mounts": [{"hostPath": "/run/gshare", "containerPath": "/run/gshare", "options": ["ro", "bind"]},
               {"hostPath": "/usr/local/lib/libgshare.so", "containerPath": "/opt/gshare/lib/libgshare.so",
                "options": ["ro", "nosuid", "nodev", "bind"]}]}}]})";

// Simulated GPUs for one arbiter: their own registry, removed at the end.
struct SimGpus {
  explicit SimGpus(const std::string& devices)
      : registry("/gshare-dp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)),
        env{std::string("LD_LIBRARY_PATH=") + SIMCUDA_DIR, "SIMCUDA_DEVICES=" + devices,
            "SIMCUDA_REGISTRY=" + registry} {}
  ~SimGpus() { ::shm_unlink(registry.c_str()); }
  static inline std::atomic<int> counter{0};
  std::string registry;
  std::vector<std::string> env;
};

auto AllHealthy(size_t n) {
  return [n](const v1beta1::ListAndWatchResponse& l) {
    return static_cast<size_t>(l.devices_size()) == n && CountHealthy(l) == n;
  };
}

class DevicePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kubelet_dir_ = dir_ / "device-plugins";
    std::filesystem::create_directories(kubelet_dir_);
    std::ofstream(dir_ / "gshare.json") << kCdiSpec;
  }
  void TearDown() override {
    client_.reset();
    StopPlugin();
    kubelet_.Stop();
    if (HasFailure()) std::fprintf(stderr, "--- plugin log:\n%s\n", ReadFile(plugin_log()).c_str());
  }

  std::string kubelet_sock() const { return kubelet_dir_ + "/kubelet.sock"; }
  std::string plugin_sock() const { return kubelet_dir_ + "/gshare.sock"; }
  std::string control_sock() const { return dir_ / "control.sock"; }
  std::string plugin_log() const { return dir_ / "plugin.log"; }

  // The arbiter on two simulated 1 GiB GPUs, its control socket in the test's directory.
  bool StartArbiter(const std::string& devices = "2x1GiB") {
    gpus_ = std::make_unique<SimGpus>(devices);
    arbiter_ = std::make_unique<ArbiterProcess>(
        dir_, std::vector<std::string>{"--control-socket", control_sock()});
    arbiter_->env = gpus_->env;
    return arbiter_->Start();
  }

  // The plugin with the test's sockets; `overrides` are flag/value pairs replacing the defaults.
  pid_t StartPlugin(std::map<std::string, std::string> overrides = {}) {
    std::map<std::string, std::string> flags = {{"--kubelet-socket", kubelet_sock()},
                                                {"--control-socket", control_sock()},
                                                {"--poll-interval", "100ms"},
                                                {"--cdi-spec", dir_ / "gshare.json"},
                                                {"--log-level", "debug"}};
    for (const auto& [k, v] : overrides) flags[k] = v;
    // GSHARE_TEST_PLUGIN_WRAPPER runs the plugin under a tool (e.g. "valgrind -q
    // --error-exitcode=9"; raise GSHARE_TEST_TIME_SCALE with it).
    std::vector<std::string> argv;
    if (const char* w = std::getenv("GSHARE_TEST_PLUGIN_WRAPPER"); w != nullptr) {
      std::istringstream words(w);
      for (std::string word; words >> word;) argv.push_back(word);
    }
    argv.push_back(PLUGIN_BIN);
    for (const auto& [k, v] : flags) {
      argv.push_back(k);
      argv.push_back(v);
    }
    plugin_ = Spawn(argv, "", plugin_log());
    return plugin_;
  }
  void StopPlugin() {
    if (plugin_ <= 0) return;
    ::kill(plugin_, SIGTERM);
    plugin_status_ = WaitFor(plugin_, Scaled(10s));
    plugin_ = -1;
  }
  bool PluginAlive() const { return plugin_ > 0 && ::kill(plugin_, 0) == 0; }

  // Usable bytes of each GPU as the arbiter reports them, in units of 256 MiB.
  uint32_t UnitsOfGpu(int gpu) {
    auto reply = arbiter::ControlCall(control_sock(), {{"cmd", "status"}}, 5s);
    if (!reply.ok()) return 0;
    for (const auto& g : (*reply)["gpus"])
      if (g["gpu"] == gpu) return static_cast<uint32_t>(g["usable_bytes"].get<uint64_t>() / (256 * kMiB));
    return 0;
  }

  // The arbiter on two GPUs, kubelet, the plugin registered with it, and client_ watching its
  // list until every device is healthy; units_ is the units per GPU. Use with
  // ASSERT_NO_FATAL_FAILURE.
  void StartNode(std::map<std::string, std::string> overrides = {}) {
    ASSERT_TRUE(StartArbiter()) << ReadFile(arbiter_->log());
    units_ = UnitsOfGpu(0);
    ASSERT_GE(units_, 3u) << "a simulated 1 GiB GPU should offer about 4 units of 256 MiB";
    ASSERT_TRUE(kubelet_.Start());
    ASSERT_GT(StartPlugin(std::move(overrides)), 0);
    ASSERT_TRUE(kubelet_.WaitForRegistration(0, Scaled(10s)))
        << "no Register call reached kubelet's socket";
    client_ = std::make_unique<PluginClient>(plugin_sock());
    client_->Watch();
    ASSERT_TRUE(client_->WaitForList(AllHealthy(2 * units_), Scaled(10s)))
        << "expected " << 2 * units_ << " healthy devices";
  }

  TempDir dir_;
  std::string kubelet_dir_;
  FakeKubelet kubelet_{kubelet_sock_path()};
  std::unique_ptr<SimGpus> gpus_;
  std::unique_ptr<ArbiterProcess> arbiter_;
  pid_t plugin_ = -1;
  int plugin_status_ = 0;
  std::unique_ptr<PluginClient> client_;
  uint32_t units_ = 0;

 private:
  std::string kubelet_sock_path() const { return dir_ / "device-plugins/kubelet.sock"; }
};

v1beta1::AllocateResponse Allocate(PluginClient& c, std::vector<std::vector<std::string>> containers,
                                   grpc::Status* status) {
  v1beta1::AllocateRequest req;
  for (const auto& ids : containers) {
    auto* cr = req.add_container_requests();
    for (const auto& id : ids) cr->add_devices_ids(id);
  }
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  *status = c.stub().Allocate(&ctx, req, &resp);
  return resp;
}

TEST_F(DevicePluginTest, RegistersAndAdvertisesTheArbitersMemoryInUnits) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const uint32_t units = units_;
  const auto reg = kubelet_.WaitForRegistration(0, 0ms);
  ASSERT_TRUE(reg);
  EXPECT_EQ(kubelet_.registrations(), 1u);
  EXPECT_EQ(reg->version(), "v1beta1");
  EXPECT_EQ(reg->endpoint(), "gshare.sock");
  EXPECT_EQ(reg->resource_name(), "gshare.io/vgpu-memory");
  EXPECT_TRUE(reg->options().get_preferred_allocation_available());
  EXPECT_FALSE(reg->options().pre_start_required());

  PluginClient client(plugin_sock());
  v1beta1::DevicePluginOptions options;
  grpc::ClientContext ctx;
  ASSERT_TRUE(client.stub().GetDevicePluginOptions(&ctx, v1beta1::Empty(), &options).ok());
  EXPECT_TRUE(options.get_preferred_allocation_available());
  const auto list = client_->WaitForList(AllHealthy(2 * units), 0ms);
  ASSERT_TRUE(list);
  EXPECT_EQ(CountOnGpu(*list, 0), units);
  EXPECT_EQ(CountOnGpu(*list, 1), units);
  EXPECT_EQ(list->devices(0).id(), "gpu0-0");
}

TEST_F(DevicePluginTest, AllocateTurnsUnitsIntoTheQuotaWithTheCdiDeviceAndItsEdits) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  PluginClient& client = *client_;

  // GetPreferredAllocation: three units that fit on one GPU come from one GPU.
  v1beta1::PreferredAllocationRequest preq;
  auto* cr = preq.add_container_requests();
  for (const char* id : {"gpu0-0", "gpu1-0", "gpu1-1", "gpu0-1", "gpu1-2", "gpu0-2"})
    cr->add_available_deviceids(id);
  cr->add_must_include_deviceids("gpu1-2");
  cr->set_allocation_size(3);
  v1beta1::PreferredAllocationResponse presp;
  grpc::ClientContext pctx;
  const auto ps = client.stub().GetPreferredAllocation(&pctx, preq, &presp);
  ASSERT_TRUE(ps.ok()) << ps.error_message();
  ASSERT_EQ(presp.container_responses_size(), 1);
  std::vector<std::string> chosen(presp.container_responses(0).deviceids().begin(),
                                  presp.container_responses(0).deviceids().end());
  EXPECT_EQ(chosen, (std::vector<std::string>{"gpu1-2", "gpu1-0", "gpu1-1"}));

  grpc::Status s;
  const auto resp = Allocate(client, {{"gpu1-0", "gpu1-1", "gpu1-2"}, {"gpu0-0"}}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.container_responses_size(), 2);
  const auto& c0 = resp.container_responses(0);
  EXPECT_EQ(c0.envs().at("GSHARE_VGPU_MEMORY"), "768MiB");
  EXPECT_EQ(resp.container_responses(1).envs().at("GSHARE_VGPU_MEMORY"), "256MiB");
  ASSERT_EQ(c0.cdi_devices_size(), 1);
  EXPECT_EQ(c0.cdi_devices(0).name(), "gshare.io/vgpu=vgpu");
  // The same edits for runtimes without CDI.
  EXPECT_EQ(c0.envs().at("LD_PRELOAD"), "/opt/gshare/lib/libgshare.so");
  EXPECT_EQ(c0.envs().at("GSHARE_ARBITER_SOCKET"), "/run/gshare/arbiter.sock");
  ASSERT_EQ(c0.mounts_size(), 2);
  EXPECT_EQ(c0.mounts(0).host_path(), "/run/gshare");
  EXPECT_EQ(c0.mounts(0).container_path(), "/run/gshare");
  EXPECT_TRUE(c0.mounts(0).read_only());
  EXPECT_EQ(c0.mounts(1).container_path(), "/opt/gshare/lib/libgshare.so");
  EXPECT_EQ(c0.devices_size(), 0) << "no device node: the shim reaches the GPU through the driver";

  // PreStartContainer is not required, and answers.
  v1beta1::PreStartContainerResponse pre;
  grpc::ClientContext prectx;
  EXPECT_TRUE(client.stub().PreStartContainer(&prectx, v1beta1::PreStartContainerRequest(), &pre).ok());
}

TEST_F(DevicePluginTest, CdiOnlyStrategyReturnsTheDeviceIdAndTheQuotaAlone) {
  ASSERT_NO_FATAL_FAILURE(
      StartNode({{"--device-list-strategy", "cdi"}, {"--cdi-spec", "/nonexistent/spec.json"}}));
  PluginClient& client = *client_;
  grpc::Status s;
  const auto resp = Allocate(client, {{"gpu0-0", "gpu0-1"}}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const auto& c = resp.container_responses(0);
  EXPECT_EQ(c.envs_size(), 1);
  EXPECT_EQ(c.envs().at("GSHARE_VGPU_MEMORY"), "512MiB");
  EXPECT_EQ(c.mounts_size(), 0);
  EXPECT_EQ(c.cdi_devices(0).name(), "gshare.io/vgpu=vgpu");
}

#ifdef GSHARE_CDI_BIN
// With the env strategy, a runtime without CDI gets exactly the env and mounts of the spec that
// gshare-cdi generate wrote for the node.
TEST_F(DevicePluginTest, EnvStrategyReturnsWhatGshareCdiWrote) {
  const std::string tenant = dir_ / "tenant";
  std::filesystem::create_directories(tenant);
  const auto gen = RunTool(dir_, {GSHARE_CDI_BIN, "generate", "--output", dir_ / "gshare.json",
                                  "--socket-dir", tenant, "--library", LIBGSHARE, "--force"});
  ASSERT_EQ(gen.code, 0) << gen.err;
  const auto spec = nlohmann::json::parse(ReadFile(dir_ / "gshare.json"));
  ASSERT_NO_FATAL_FAILURE(StartNode({{"--device-list-strategy", "env"}}));
  grpc::Status s;
  const auto resp = Allocate(*client_, {{"gpu0-0", "gpu0-1"}}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const auto& c = resp.container_responses(0);
  EXPECT_EQ(c.cdi_devices_size(), 0);
  EXPECT_EQ(c.envs().at("GSHARE_VGPU_MEMORY"), "512MiB");
  size_t envs = 0, mounts = 0;
  for (const auto& scope : {spec, spec["devices"][0]}) {
    if (!scope.contains("containerEdits")) continue;
    const auto& edits = scope["containerEdits"];
    for (const auto& e : edits.value("env", nlohmann::json::array())) {
      const std::string kv = e.get<std::string>();
      const std::string key = kv.substr(0, kv.find('='));
      ASSERT_TRUE(c.envs().contains(key)) << key;
      EXPECT_EQ(c.envs().at(key), kv.substr(kv.find('=') + 1));
      ++envs;
    }
    for (const auto& m : edits.value("mounts", nlohmann::json::array())) {
      bool found = false;
      for (const auto& got : c.mounts())
        found |= got.host_path() == m["hostPath"] && got.container_path() == m["containerPath"];
      EXPECT_TRUE(found) << m.dump();
      ++mounts;
    }
  }
  EXPECT_GE(envs, 2u) << "LD_PRELOAD and GSHARE_ARBITER_SOCKET at least";
  EXPECT_EQ(static_cast<size_t>(c.mounts_size()), mounts);
  EXPECT_EQ(c.envs().at("GSHARE_ARBITER_SOCKET"), tenant + "/arbiter.sock");
}
#endif

TEST_F(DevicePluginTest, ImpossibleAndMalformedRequestsGetClearErrorsAndThePluginKeepsServing) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const uint32_t units = units_;
  PluginClient& client = *client_;

  grpc::Status s;
  // More units than one GPU holds, even though the node as a whole has them.
  std::vector<std::string> too_many;
  for (uint32_t u = 0; u < units; ++u) too_many.push_back("gpu0-" + std::to_string(u));
  too_many.push_back("gpu1-0");
  (void)Allocate(client, {too_many}, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("container 0: " + std::to_string(units + 1) + " units of 256 MiB"),
            std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("ask for fewer units"), std::string::npos);

  (void)Allocate(client, {{"gpu0-0"}, {"gpu9-0"}}, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("container 1: device 'gpu9-0' is not one of this plugin's devices"),
            std::string::npos)
      << s.error_message();
  (void)Allocate(client, {{"nvidia.com/gpu-0"}}, &s);
  EXPECT_NE(s.error_message().find("is not a gshare device id"), std::string::npos) << s.error_message();
  (void)Allocate(client, {{"gpu0-1", "gpu0-1"}}, &s);
  EXPECT_NE(s.error_message().find("requested twice"), std::string::npos) << s.error_message();
  (void)Allocate(client, {{}}, &s);
  EXPECT_NE(s.error_message().find("no device ids"), std::string::npos) << s.error_message();
  (void)Allocate(client, {}, &s);
  EXPECT_NE(s.error_message().find("no container requests"), std::string::npos) << s.error_message();

  v1beta1::PreferredAllocationRequest preq;
  auto* cr = preq.add_container_requests();
  cr->add_available_deviceids("gpu0-0");
  cr->set_allocation_size(-3);
  v1beta1::PreferredAllocationResponse presp;
  grpc::ClientContext pctx;
  const auto ps = client.stub().GetPreferredAllocation(&pctx, preq, &presp);
  EXPECT_EQ(ps.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(ps.error_message().find("allocation_size -3 is negative"), std::string::npos);

  // Bytes that are not a protobuf message at all, on the same method.
  auto channel = grpc::CreateChannel("unix:" + plugin_sock(), grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  grpc::ClientContext gctx;
  gctx.set_deadline(std::chrono::system_clock::now() + 5s);
  const std::string junk = "\xff\xff\xff\xff\x0f not protobuf";
  grpc::Slice slice(junk);
  grpc::ByteBuffer request(&slice, 1), reply;
  std::atomic<bool> done{false};
  grpc::Status gs;
  std::mutex mu;
  std::condition_variable cv;
  generic.UnaryCall(&gctx, "/v1beta1.DevicePlugin/Allocate", grpc::StubOptions(), &request, &reply,
                    [&](grpc::Status st) {
                      std::lock_guard lock(mu);
                      gs = st;
                      done = true;
                      cv.notify_all();
                    });
  {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 10s, [&] { return done.load(); });
  }
  ASSERT_TRUE(done);
  EXPECT_FALSE(gs.ok());

  // Still serving: a good request works and the stream is alive.
  (void)Allocate(client, {{"gpu0-0"}}, &s);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(PluginAlive());
  EXPECT_FALSE(client.stream_ended());
}

TEST_F(DevicePluginTest, DrainAndUndrainChangeTheGpusHealth) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const uint32_t units = units_;
  PluginClient& client = *client_;

  size_t from = client.lists();
  auto reply = arbiter::ControlCall(control_sock(), {{"cmd", "drain"}, {"gpu", 1}}, 5s);
  ASSERT_TRUE(reply.ok() && (*reply)["ok"] == true) << (reply.ok() ? reply->dump() : reply.status().message());
  const auto drained = client.WaitForList(
      [&](const auto& l) { return CountHealthy(l, 1) == 0 && CountHealthy(l, 0) == units; },
      Scaled(10s), from);
  ASSERT_TRUE(drained) << "no list with GPU 1's devices unhealthy after drain";
  EXPECT_EQ(CountOnGpu(*drained, 1), units) << "a drained GPU's devices stay listed";

  from = client.lists();
  reply = arbiter::ControlCall(control_sock(), {{"cmd", "undrain"}, {"gpu", 1}}, 5s);
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(client.WaitForList(AllHealthy(2 * units), Scaled(10s), from))
      << "no list with every device healthy after undrain";
}

TEST_F(DevicePluginTest, ArbiterGoneMakesEveryDeviceUnhealthyUntilItIsBack) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const uint32_t units = units_;
  PluginClient& client = *client_;

  size_t from = client.lists();
  arbiter_->Kill();
  const auto down = client.WaitForList(
      [&](const auto& l) { return l.devices_size() == static_cast<int>(2 * units) && CountHealthy(l) == 0; },
      Scaled(10s), from);
  ASSERT_TRUE(down) << "no list with every device unhealthy after the arbiter died";
  grpc::Status s;
  (void)Allocate(client, {{"gpu0-0"}}, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("gshare-arbiter's state is unknown"), std::string::npos)
      << s.error_message();
  EXPECT_NE(ReadFile(plugin_log()).find("unreachable, every device is unhealthy"), std::string::npos);

  from = client.lists();
  ASSERT_TRUE(arbiter_->Start()) << ReadFile(arbiter_->log());
  EXPECT_TRUE(client.WaitForList(AllHealthy(2 * units), Scaled(10s), from))
      << "the devices did not come back with the arbiter";
  (void)Allocate(client, {{"gpu0-0"}}, &s);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(kubelet_.registrations(), 1u) << "an arbiter restart needs no new registration";
}

TEST_F(DevicePluginTest, GpuTheArbiterNoLongerManagesBecomesUnhealthy) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const uint32_t units = units_;
  PluginClient& client = *client_;
  // The arbiter comes back with one GPU: the other is lost.
  ASSERT_TRUE(arbiter_->Stop().is_object());
  const size_t from = client.lists();
  ASSERT_TRUE(StartArbiter("1x1GiB")) << ReadFile(arbiter_->log());
  const auto lost = client.WaitForList(
      [&](const auto& l) {
        return CountOnGpu(l, 1) == units && CountHealthy(l, 1) == 0 && CountHealthy(l, 0) == units;
      },
      Scaled(10s), from);
  EXPECT_TRUE(lost) << "GPU 1's devices should be listed unhealthy";
  EXPECT_NE(ReadFile(plugin_log()).find("GPU 1: " + std::to_string(units) +
                                        " unit(s), lost (no longer managed by the arbiter)"),
            std::string::npos);
}

TEST_F(DevicePluginTest, KubeletRestartEmptyingItsDirectoryGetsANewRegistration) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  // kubelet restarts: it stops, removes every socket in its directory, starts a new server.
  kubelet_.Stop();
  for (const auto& e : std::filesystem::directory_iterator(kubelet_dir_))
    std::filesystem::remove(e.path());
  std::this_thread::sleep_for(300ms);
  client_.reset();
  ASSERT_TRUE(kubelet_.Start());
  const auto reg = kubelet_.WaitForRegistration(1, Scaled(10s));
  ASSERT_TRUE(reg) << "no second Register after kubelet restarted";
  EXPECT_EQ(reg->endpoint(), "gshare.sock");
  PluginClient again(plugin_sock());
  again.Watch();
  EXPECT_TRUE(again.WaitForList([](const auto& l) { return CountHealthy(l) > 0; }, Scaled(10s)))
      << "the plugin does not serve on its new socket";
}

TEST_F(DevicePluginTest, KubeletDirectoryRecreatedGetsANewRegistration) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  client_.reset();
  kubelet_.Stop();
  std::filesystem::remove_all(kubelet_dir_);
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(PluginAlive());
  std::filesystem::create_directories(kubelet_dir_);
  ASSERT_TRUE(kubelet_.Start());
  ASSERT_TRUE(kubelet_.WaitForRegistration(1, Scaled(10s))) << "no Register after the directory came back";
  PluginClient again(plugin_sock());
  again.Watch();
  EXPECT_TRUE(again.WaitForList([](const auto& l) { return CountHealthy(l) > 0; }, Scaled(10s)));
}

TEST_F(DevicePluginTest, MissingKubeletOrRefusedRegistrationIsReportedAndRetried) {
  ASSERT_TRUE(StartArbiter()) << ReadFile(arbiter_->log());
  ASSERT_GT(StartPlugin(), 0);
  // No kubelet yet: the plugin says so, serves, and waits.
  const auto end = std::chrono::steady_clock::now() + Scaled(10s);
  while (ReadFile(plugin_log()).find("kubelet.sock does not exist") == std::string::npos &&
         std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(20ms);
  EXPECT_NE(ReadFile(plugin_log()).find(kubelet_sock() + " does not exist: serving, and waiting"),
            std::string::npos);
  EXPECT_TRUE(PluginAlive());
  // kubelet refuses at first (e.g. the resource name is taken), then accepts.
  kubelet_.RefuseWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "resource name taken"));
  ASSERT_TRUE(kubelet_.Start());
  ASSERT_TRUE(kubelet_.WaitForRegistration(0, Scaled(10s)));
  kubelet_.RefuseWith(grpc::Status::OK);
  ASSERT_TRUE(kubelet_.WaitForRegistration(1, Scaled(20s))) << "the refused registration was not retried";
  EXPECT_NE(ReadFile(plugin_log()).find("resource name taken (retrying)"), std::string::npos);
  EXPECT_TRUE(PluginAlive());
}

TEST_F(DevicePluginTest, NoArbiterAtStartServesAnEmptyListAndPicksItUpLater) {
  ASSERT_TRUE(kubelet_.Start());
  ASSERT_GT(StartPlugin(), 0);
  ASSERT_TRUE(kubelet_.WaitForRegistration(0, Scaled(10s)));
  PluginClient client(plugin_sock());
  client.Watch();
  ASSERT_TRUE(client.WaitForList([](const auto& l) { return l.devices_size() == 0; }, Scaled(10s)));
  EXPECT_NE(ReadFile(plugin_log()).find("gshare-arbiter is not running at " + control_sock()),
            std::string::npos);
  ASSERT_TRUE(StartArbiter()) << ReadFile(arbiter_->log());
  EXPECT_TRUE(client.WaitForList([](const auto& l) { return CountHealthy(l) >= 6; }, Scaled(10s)));
}

TEST_F(DevicePluginTest, MalformedConfigurationIsRefusedNamingTheKeyAndLine) {
  std::ofstream(dir_ / "plugin.toml") << "[device_plugin]\nunit = \"256MiB\"\novercommit = 0.25\n";
  auto r = RunTool(dir_, {PLUGIN_BIN, "--config", dir_ / "plugin.toml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(dir_ / "plugin.toml" + ": line 3: overcommit: '0.25' is out of range (1 to 64)"),
            std::string::npos)
      << r.err;
  r = RunTool(dir_, {PLUGIN_BIN, "--unit", "1.5MiB"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--unit: unit: '1.5MiB' must be a whole number of MiB"), std::string::npos) << r.err;
  r = RunTool(dir_, {PLUGIN_BIN, "--no-such-flag"});
  EXPECT_EQ(r.code, 2);
}

TEST_F(DevicePluginTest, SigtermStopsThePluginAndRemovesItsSocket) {
  ASSERT_TRUE(kubelet_.Start());
  ASSERT_GT(StartPlugin(), 0);
  ASSERT_TRUE(kubelet_.WaitForRegistration(0, Scaled(10s)));
  ASSERT_TRUE(std::filesystem::exists(plugin_sock()));
  StopPlugin();
  EXPECT_EQ(ExitCode(plugin_status_), 0);
  EXPECT_FALSE(std::filesystem::exists(plugin_sock()));
}

}  // namespace
}  // namespace gshare::deviceplugin::testing
