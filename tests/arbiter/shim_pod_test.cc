// Per-pod attribution (issue 18, item 6) with the real shim, a real gshare-arbiter on simcuda
// and the real wire format: a program whose pod spec sets GSHARE_POD_NAME/GSHARE_POD_NAMESPACE
// (the downward API) is shown with its pod in the control socket's clients JSON and as the
// pod/namespace labels of its metrics; malformed values are dropped by the shim (the program
// runs on) and hostile ones sent straight over the socket are refused by the arbiter, which
// serves on.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "gshare/arbiter/control_client.h"
#include "gshare/shm/registration.h"
#include "gshare/shm/unix_socket.h"
#include "gshare/shm/wire.h"
#include "shim_test_env.h"
#include "swap_probe.h"
#include "raw_register.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ShimPod : public ::testing::Test {
 protected:
  ShimPod() : simcuda(::testing::UnitTest::GetInstance()->current_test_info()->name(), "1x512MiB") {}
  void SetUp() override {
    arb.env = simcuda.env();
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  }
  nlohmann::json Clients() {
    auto reply = ControlCall(dir / "control.sock", {{"cmd", "clients"}}, seconds(10));
    return reply.ok() && reply->contains("clients") ? (*reply)["clients"] : nlohmann::json();
  }
  std::string Metrics() {
    httplib::Client http(dir / "metrics.sock");
    http.set_address_family(AF_UNIX);
    auto res = http.Get("/metrics");
    return res && res->status == 200 ? res->body : std::string();
  }
  // Polls /metrics until it contains `needle` (safety net, scaled); the last page.
  std::string MetricsWith(const std::string& needle) {
    const auto deadline = std::chrono::steady_clock::now() + Scaled(seconds(60));
    std::string page = Metrics();
    while (page.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(50));
      page = Metrics();
    }
    return page;
  }

  TempDir dir;
  Simcuda simcuda;
  ArbiterProcess arb{dir, {"--policy", "fifo", "--slice", "5ms", "--metrics", "unix:" + (dir / "metrics.sock")}};
};

TEST_F(ShimPod, PodIsShownInClientsAndMetrics) {
  const std::string log = dir / "pod.log";
  std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "128MiB", "resnet", log);
  env.push_back("GSHARE_POD_NAME=resnet-7d4b9c-x2k4p");
  env.push_back("GSHARE_POD_NAMESPACE=team-a");
  test::SwapProbe p(PROBE_BIN, 7, 4, 16, EnvMap(env), LineWait());
  ASSERT_TRUE(p.ready()) << ReadFile(log);
  EXPECT_TRUE(p.Verify().intact()) << ReadFile(log);
  const nlohmann::json clients = Clients();
  ASSERT_TRUE(clients.is_array() && clients.size() == 1) << clients.dump();
  EXPECT_EQ(clients[0]["pod"], "resnet-7d4b9c-x2k4p") << clients.dump();
  EXPECT_EQ(clients[0]["namespace"], "team-a") << clients.dump();
  EXPECT_NE(ReadFile(arb.log()).find("pod team-a/resnet-7d4b9c-x2k4p"), std::string::npos)
      << ReadFile(arb.log());
  const std::string labels = R"(function="resnet",namespace="team-a",pod="resnet-7d4b9c-x2k4p")";
  const std::string page = MetricsWith("gshare_arbiter_function_requests_total{" + labels + "}");
  EXPECT_NE(page.find("gshare_arbiter_function_instances{" + labels + ",warm="), std::string::npos)
      << page;
  EXPECT_NE(page.find("gshare_arbiter_function_requests_total{" + labels + "}"), std::string::npos)
      << page;
  EXPECT_NE(page.find("gshare_arbiter_burst_duration_seconds_count{" + labels + "}"), std::string::npos)
      << page;
  EXPECT_EQ(p.Quit(ExitWait()), 0) << ReadFile(log);
}

TEST_F(ShimPod, MalformedPodVariablesAreDroppedAndTheProgramRunsOn) {
  const std::string log = dir / "bad.log";
  std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "128MiB", "victim", log);
  // A label-injection attempt and a namespace over the DNS-1123 label's 63 bytes.
  env.push_back("GSHARE_POD_NAME=x\"} 1\nevil_metric{a=\"b\"} 1\n");
  env.push_back("GSHARE_POD_NAMESPACE=" + std::string(64, 'n'));
  test::SwapProbe p(PROBE_BIN, 8, 4, 16, EnvMap(env), LineWait());
  ASSERT_TRUE(p.ready()) << ReadFile(log);
  EXPECT_TRUE(p.Verify().intact()) << ReadFile(log);
  const std::string shim_log = ReadFile(log);
  EXPECT_NE(shim_log.find("GSHARE_POD_NAME has the byte 0x22 at offset 1"), std::string::npos) << shim_log;
  EXPECT_NE(shim_log.find("GSHARE_POD_NAMESPACE is 64 bytes long"), std::string::npos) << shim_log;
  EXPECT_EQ(shim_log.find("evil_metric"), std::string::npos) << shim_log;
  const nlohmann::json clients = Clients();
  ASSERT_TRUE(clients.is_array() && clients.size() == 1) << clients.dump();
  EXPECT_EQ(clients[0]["function"], "victim");
  EXPECT_EQ(clients[0]["pod"], "") << clients.dump();
  EXPECT_EQ(clients[0]["namespace"], "") << clients.dump();
  const std::string page = MetricsWith("gshare_arbiter_function_requests_total{function=\"victim\"}");
  EXPECT_NE(page.find("gshare_arbiter_function_requests_total{function=\"victim\"}"), std::string::npos)
      << page;
  EXPECT_EQ(page.find("evil_metric"), std::string::npos) << page;
  EXPECT_EQ(p.Quit(ExitWait()), 0) << ReadFile(log);
}

// A tenant that skips the shim and writes the registration itself.
TEST_F(ShimPod, HostilePodFieldsOnTheWireAreRefused) {
  shm::RegisterRequest req;
  req.quota_bytes = 64ull << 20;
  req.slo_ms = 100;
  req.function_name = "raw";
  auto good = shm::EncodeRequest(req);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  struct Case {
    size_t at;
    size_t size;
    std::string value;
    std::string field;
  };
  const size_t name_at = offsetof(shm::RegisterRequestWire, pod_name);
  const size_t ns_at = offsetof(shm::RegisterRequestWire, pod_namespace);
  const std::vector<Case> cases = {
      {name_at, shm::kPodNameSize, "x\"} 1\nevil_metric 1", "pod_name"},
      {name_at, shm::kPodNameSize, "x\",pod=\"spoofed", "pod_name"},
      {name_at, shm::kPodNameSize, std::string(shm::kPodNameSize, 'a'), "pod_name"},  // no NUL
      {name_at, shm::kPodNameSize, std::string(254, 'a'), "pod_name"},
      {ns_at, shm::kPodNamespaceSize, "Kube-System", "pod_namespace"},
      {ns_at, shm::kPodNamespaceSize, "a\\b", "pod_namespace"}};
  for (const Case& c : cases) {
    std::vector<std::byte> bytes = *good;
    std::memcpy(bytes.data() + c.at, c.value.data(), std::min(c.value.size(), c.size));
    auto reply = RawRegister(arb.socket(), bytes);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_FALSE(reply->accepted) << c.value;
    EXPECT_NE(reply->reason.find(c.field), std::string::npos) << reply->reason;
  }
  EXPECT_EQ(ReadFile(arb.log()).find("evil_metric"), std::string::npos) << ReadFile(arb.log());
  // The arbiter serves on: a well-formed registration naming its pod is accepted and shown.
  req.pod_name = "raw-0";
  req.pod_namespace = "ns1";
  auto reg = shm::Register(arb.socket(), req, seconds(5));
  ASSERT_TRUE(reg.ok()) << reg.status().ToString() << ReadFile(arb.log());
  const nlohmann::json clients = Clients();
  ASSERT_TRUE(clients.is_array() && clients.size() == 1) << clients.dump();
  EXPECT_EQ(clients[0]["pod"], "raw-0");
  EXPECT_EQ(clients[0]["namespace"], "ns1");
  // The page is rendered periodically: wait for one that has the new client.
  const std::string instance =
      R"(gshare_arbiter_function_instances{function="raw",namespace="ns1",pod="raw-0",warm=)";
  const std::string page = MetricsWith(instance);
  EXPECT_NE(page.find(instance), std::string::npos) << page;
  EXPECT_EQ(page.find("evil_metric"), std::string::npos) << page;
  EXPECT_EQ(page.find("spoofed"), std::string::npos) << page;
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["refusals"], static_cast<int>(cases.size())) << summary.dump();
  EXPECT_EQ(summary["registrations"], 1) << summary.dump();
}

}  // namespace
}  // namespace gshare::arbiter::testing
