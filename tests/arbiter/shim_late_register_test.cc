// A program started before its node's arbiter (issue 18: a pod whose node DaemonSet is
// restarting): with the real shim and a real gshare-arbiter on simcuda. The shim finds no
// arbiter, runs stand-alone (its calls are not blocked, its memory intact) and registers in the
// background with back-off, so the client appears once the arbiter is started — as a late
// first registration, not a re-registration — and from then on is scheduled by the arbiter.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gshare/arbiter/control_client.h"
#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::milliseconds;


// The clients the arbiter lists over its control socket (null when it does not answer).
nlohmann::json Clients(const TempDir& dir) {
  auto reply = ControlCall(dir / "control.sock", {{"cmd", "clients"}}, std::chrono::seconds(10));
  return reply.ok() && reply->contains("clients") ? (*reply)["clients"] : nlohmann::json();
}

TEST(ShimLateRegistration, ProgramStartedBeforeTheArbiterJoinsItWhenItAppears) {
  TempDir dir;
  const Simcuda simcuda("late", "1x512MiB");
  ArbiterProcess arb{dir, {"--policy", "fifo", "--slice", "5ms"}};
  arb.env = simcuda.env();
  const std::string log = dir / "early.log";
  std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "256MiB", "early", log);
  env.push_back("GSHARE_REGISTER_RETRY=200ms");  // the back-off's cap: joins soon after
  // No arbiter yet: the program starts, allocates and computes stand-alone.
  test::SwapProbe p(PROBE_BIN, 6, 4, 16, EnvMap(env), LineWait());
  ASSERT_TRUE(p.ready()) << ReadFile(log);
  EXPECT_TRUE(p.Verify().intact()) << ReadFile(log);
  EXPECT_NE(ReadFile(log).find("not reachable yet"), std::string::npos) << ReadFile(log);
  EXPECT_EQ(ReadFile(log).find("registered with the arbiter"), std::string::npos) << ReadFile(log);

  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  ASSERT_TRUE(LogHas(log, "(late first registration)")) << ReadFile(log) << ReadFile(arb.log());
  const nlohmann::json clients = Clients(dir);
  ASSERT_TRUE(clients.is_array() && clients.size() == 1) << clients.dump();
  EXPECT_EQ(clients[0]["function"], "early") << clients.dump();
  EXPECT_EQ(clients[0]["pid"], p.pid()) << clients.dump();
  // Its memory (already on the GPU) survives joining, and its work now needs the token.
  const test::Verified v = p.Verify();
  EXPECT_TRUE(v.intact()) << v.line << "\n" << ReadFile(log) << ReadFile(arb.log());
  EXPECT_EQ(p.Quit(ExitWait()), 0) << ReadFile(log);
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["registrations"], 1) << summary.dump();
  EXPECT_EQ(summary["re_registrations"], 0) << summary.dump();
  EXPECT_GE(summary["grants"].get<int>(), 1) << "its work was not scheduled\n" << summary.dump();
  EXPECT_EQ(summary["gpus"][0]["overshoot_events"], 0) << summary.dump();
  EXPECT_EQ(summary["gpus"][0]["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
}

// GSHARE_REGISTER_RETRY=0: the old behaviour, stand-alone for good.
TEST(ShimLateRegistration, RetryOffStaysStandAlone) {
  TempDir dir;
  const Simcuda simcuda("lateoff", "1x512MiB");
  ArbiterProcess arb{dir, {"--policy", "fifo"}};
  arb.env = simcuda.env();
  const std::string log = dir / "off.log";
  std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "128MiB", "off", log);
  env.push_back("GSHARE_REGISTER_RETRY=0");
  test::SwapProbe p(PROBE_BIN, 6, 4, 16, EnvMap(env), LineWait());
  ASSERT_TRUE(p.ready()) << ReadFile(log);
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  EXPECT_TRUE(p.Verify().intact()) << ReadFile(log);
  const nlohmann::json clients = Clients(dir);
  ASSERT_TRUE(clients.is_array()) << clients.dump();
  EXPECT_TRUE(clients.empty()) << clients.dump();
  EXPECT_NE(ReadFile(log).find("running stand-alone"), std::string::npos) << ReadFile(log);
  EXPECT_EQ(p.Quit(ExitWait()), 0) << ReadFile(log);
}

}  // namespace
}  // namespace gshare::arbiter::testing
