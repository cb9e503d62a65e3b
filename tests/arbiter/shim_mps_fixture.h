// The fixture of the shim tests of MPS clients (shim_mps_pin_test.cc, shim_mps_share_test.cc):
// a real gshare-arbiter on simcuda with GPU 0 marked for co-running and its private MPS daemon
// (simcuda-mps-control) serving before the test body runs, the control socket's calls, the
// clients list, the counters, and the real gshare-ctl. The daemon is stopped with the arbiter;
// one left behind is killed and reported. Every wait is a safety net, never a measurement.
#pragma once

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gshare/arbiter/control_client.h"
#include "shim_test_env.h"
#include "test_util.h"

namespace gshare::arbiter::testing {

class ShimMpsArbiter : public ::testing::Test {
 protected:
  using json = nlohmann::json;
  using milliseconds = std::chrono::milliseconds;
  using seconds = std::chrono::seconds;

  ShimMpsArbiter() : simcuda(::testing::UnitTest::GetInstance()->current_test_info()->name()) {}
  void SetUp() override {
    ASSERT_EQ(::mkdir((dir / "mps").c_str(), 0755), 0);
    arb.env = simcuda.env();
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
    // The programs must find the daemon serving when they initialise CUDA.
    const auto deadline = std::chrono::steady_clock::now() + Scaled(seconds(30));
    do {
      const json status = Call({{"cmd", "status"}});
      if (status.contains("gpus") && status["gpus"].is_array() && !status["gpus"].empty()) {
        const json mps = status["gpus"][0].value("corun", json::object()).value("mps", json());
        if (mps.is_object() && mps.value("running", false)) {
          daemon_pid = mps.value("pid", 0);
          break;
        }
      }
      std::this_thread::sleep_for(milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    ASSERT_GT(daemon_pid, 0) << ReadFile(arb.log());
    ASSERT_TRUE(MpsDaemonServes(dir)) << ReadFile(arb.log());
  }
  // The arbiter stops its daemon at shutdown; a test that ended early (a failed ASSERT) still
  // stops the arbiter gracefully, and a daemon left behind (it is the arbiter's child, started
  // for this test) is killed, so no `simcuda-mps-control -f` outlives the test.
  void TearDown() override {
    if (arb.pid() > 0) (void)arb.Stop();
    if (daemon_pid > 0 && ::kill(daemon_pid, 0) == 0) {
      ADD_FAILURE() << "the MPS daemon " << daemon_pid << " outlived the arbiter";
      ::kill(daemon_pid, SIGKILL);
    }
  }

  json Call(const json& request) {
    auto reply = ControlCall(dir / "control.sock", request, seconds(10));
    return reply.ok() && reply->is_object() ? *reply : json::object();
  }
  // The real gshare-ctl against the arbiter's control socket.
  ToolResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {GSHARE_CTL_BIN, "--socket", dir / "control.sock"});
    return RunTool(dir, args);
  }
  // The clients list's entry named `name` (null when absent).
  json Client(const std::string& name) {
    for (const json& c : Call({{"cmd", "clients"}}).value("clients", json::array()))
      if (c.value("function", "") == name) return c;
    return nullptr;
  }
  // Polls the clients list until `pred` holds for `name`'s entry (safety net); the last entry.
  template <typename Pred>
  json ClientWhen(const std::string& name, Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + Scaled(seconds(30));
    json c;
    do {
      c = Client(name);
      if (c.is_object() && pred(c)) return c;
      std::this_thread::sleep_for(milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return c;
  }
  uint64_t Counter(const std::string& key) {
    return Call({{"cmd", "status"}}).value("counters", json::object()).value(key, uint64_t{0});
  }
  TempDir dir;
  Simcuda simcuda;
  ArbiterProcess arb{dir, CorunArbiterArgs(dir)};
  pid_t daemon_pid = 0;
};

}  // namespace gshare::arbiter::testing
