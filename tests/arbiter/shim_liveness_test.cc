// Liveness with the real shim and a real gshare-arbiter on simcuda (issue 4): unmodified programs
// (tests/preload's preload_probe, "swap" mode: checksummed data, verified on request) under
// LD_PRELOAD=libgshare.so keep correct results when the arbiter is killed (fail-open, then
// re-registration with a new arbiter on the same socket), hold their submissions while it is
// gone in fail-closed mode, and keep running when another client is killed while it works; and
// each vGPU's memory lands on the GPU the arbiter assigned at registration.
#include <signal.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Polls `path` until it contains `needle` `count` times (safety-net timeout, scaled, not a
// measurement).
bool WaitForLog(const std::string& path, const std::string& needle, int count = 1,
                std::chrono::seconds timeout = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  for (;;) {
    const std::string text = ReadFile(path);
    int seen = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++seen;
    }
    if (seen >= count) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// One `preload_probe swap` program under the shim.
struct Probe {
  std::unique_ptr<test::SwapProbe> swap;
  std::string log;
};

Probe StartProbe(const Simcuda& simcuda, const ArbiterProcess& arb, const TempDir& dir,
                 const std::string& name, std::vector<std::string> extra_env = {}) {
  Probe p;
  p.log = dir / (name + ".log");
  std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "300MiB", name, p.log);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  p.swap = std::make_unique<test::SwapProbe>(PROBE_BIN, 3, 8, 64, EnvMap(env), LineWait());
  EXPECT_TRUE(p.swap->ready()) << p.swap->ready_line() << ReadFile(p.log)
                               << p.swap->WhyItStopped();
  return p;
}

// Whether the probe answered "verify" with every block intact.
bool VerifiedIntact(Probe& p) { return p.swap->Verify().intact(); }

class ShimLiveness : public ::testing::Test {
 protected:
  ShimLiveness() : simcuda(::testing::UnitTest::GetInstance()->current_test_info()->name()) {}
  void SetUp() override {
    arb.env = simcuda.env();
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  }

  TempDir dir;
  const Simcuda simcuda;
  ArbiterProcess arb{dir, {"--slice", "5ms"}};
};

// kill -9 of the arbiter mid-run: both programs keep running with correct results (fail-open,
// under their last assignment) and re-register when a new arbiter starts on the same socket,
// after which they take turns through it again.
TEST_F(ShimLiveness, ArbiterKilledProgramsRunFailOpenAndReRegister) {
  std::vector<Probe> probes;
  for (const char* name : {"a", "b"}) probes.push_back(StartProbe(simcuda, arb, dir, name));
  for (Probe& p : probes) EXPECT_TRUE(VerifiedIntact(p)) << ReadFile(p.log);
  arb.Kill();
  for (Probe& p : probes) ASSERT_TRUE(WaitForLog(p.log, "arbiter lost")) << ReadFile(p.log);
  for (Probe& p : probes) {
    EXPECT_TRUE(VerifiedIntact(p)) << "without an arbiter: " << ReadFile(p.log);
  }
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  for (Probe& p : probes) {
    ASSERT_TRUE(WaitForLog(p.log, "(re-registration)")) << ReadFile(p.log) << ReadFile(arb.log());
  }
  for (int round = 0; round < 2; ++round) {
    for (Probe& p : probes) EXPECT_TRUE(VerifiedIntact(p)) << "after re-registering: " << ReadFile(p.log);
  }
  for (Probe& p : probes) EXPECT_EQ(p.swap->Quit(ExitWait()), 0) << p.swap->process().err();
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["re_registrations"], 2) << summary.dump();
  EXPECT_GT(summary["grants"].get<int>(), 0) << summary.dump();
}

// GSHARE_ARBITER_FAIL=closed: while the arbiter is gone a submission waits (the probe does not
// answer); when a new arbiter starts on the socket the program re-registers, gets the token and
// the held request completes with intact data.
TEST_F(ShimLiveness, FailClosedHoldsSubmissionsUntilAnArbiterIsBack) {
  Probe p = StartProbe(simcuda, arb, dir, "closed", {"GSHARE_ARBITER_FAIL=closed"});
  EXPECT_TRUE(VerifiedIntact(p)) << ReadFile(p.log);
  arb.Kill();
  ASSERT_TRUE(WaitForLog(p.log, "fail-closed (submissions wait)")) << ReadFile(p.log);
  // Held: no answer while no arbiter runs (the wait is the test's, not a speed requirement),
  // then the held request's answer once an arbiter is back.
  std::future<test::Verified> held = std::async(std::launch::async, [&p] { return p.swap->Verify(); });
  EXPECT_EQ(held.wait_for(milliseconds(700)), std::future_status::timeout) << "answered while held";
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  const test::Verified v = held.get();
  ASSERT_TRUE(v.answered) << ReadFile(p.log) << ReadFile(arb.log());
  EXPECT_TRUE(v.intact()) << v.line;
  EXPECT_NE(ReadFile(p.log).find("(re-registration)"), std::string::npos) << ReadFile(p.log);
  EXPECT_EQ(p.swap->Quit(ExitWait()), 0) << p.swap->process().err();
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["re_registrations"], 1) << summary.dump();
}

// Programs that exit normally (main returns while the shim's service thread runs, one of them
// right after holding the token) say goodbye: the arbiter unregisters them cleanly and counts no
// client death; they exit with status 0 (no crash or hang at exit).
TEST_F(ShimLiveness, NormalExitSaysGoodbye) {
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i) {
    const std::string name = "leaver" + std::to_string(i);
    pids.push_back(Spawn({PROBE_BIN, "stress", "2", "20"}, dir / (name + ".out"),
                         dir / (name + ".err"),
                         ShimEnv(simcuda, arb.socket(), "256MiB", name, dir / (name + ".log"))));
    ASSERT_GT(pids.back(), 0);
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    const std::string name = "leaver" + std::to_string(i);
    EXPECT_EQ(ExitCode(WaitFor(pids[i], Scaled(seconds(120)))), 0)
        << ReadFile(dir / (name + ".err"));
    EXPECT_NE(ReadFile(dir / (name + ".out")).find("errors=0"), std::string::npos);
    EXPECT_NE(ReadFile(dir / (name + ".log")).find("said goodbye to the arbiter"),
              std::string::npos)
        << ReadFile(dir / (name + ".log"));
  }
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["client_deaths"], 0) << summary.dump() << ReadFile(arb.log());
  EXPECT_GT(summary["grants"].get<int>(), 0) << summary.dump();
  EXPECT_EQ(summary["gpus"][0]["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
}

// kill -9 of a program that keeps the GPU busy (two threads copying and launching without pause,
// so it holds the token most of the time): the arbiter reclaims it and the other program gets
// the token and finds its data intact.
TEST_F(ShimLiveness, KilledBusyProgramDoesNotStopTheOther) {
  Probe quiet = StartProbe(simcuda, arb, dir, "quiet");
  const std::string busy_log = dir / "busy.log";
  const pid_t busy = Spawn({PROBE_BIN, "stress", "2", "1000000"}, dir / "busy.out",
                           dir / "busy.err",
                           ShimEnv(simcuda, arb.socket(), "300MiB", "busy", busy_log));
  ASSERT_GT(busy, 0);
  ASSERT_TRUE(WaitForLog(busy_log, "registered with the arbiter at")) << ReadFile(busy_log);
  EXPECT_TRUE(VerifiedIntact(quiet)) << "sharing with the busy one: " << ReadFile(quiet.log);
  ASSERT_EQ(::kill(busy, SIGKILL), 0);
  EXPECT_EQ(WaitFor(busy, Scaled(seconds(30))) & 0x7f, SIGKILL);
  EXPECT_TRUE(WaitForLog(arb.log(), "'busy' pid " + std::to_string(busy) + " is gone"))
      << ReadFile(arb.log());
  for (int round = 0; round < 3; ++round) {
    EXPECT_TRUE(VerifiedIntact(quiet)) << "after the kill: " << ReadFile(quiet.log) << ReadFile(arb.log());
  }
  EXPECT_EQ(quiet.swap->Quit(ExitWait()), 0) << quiet.swap->process().err();
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  // The killed one; the other exited normally and said goodbye (a clean unregister).
  EXPECT_EQ(summary["client_deaths"], 1) << summary.dump();
  EXPECT_NE(ReadFile(arb.log()).find("'quiet' said goodbye"), std::string::npos) << ReadFile(arb.log());
  EXPECT_EQ(summary["gpus"][0]["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
}

// Placement: the arbiter assigns each registering vGPU a GPU, and the shim's memory must land
// there. Two programs with 700 MiB quotas on two 1 GiB GPUs (one per GPU; together they do not
// fit on either) each allocate a 600 MiB block right after registering: with every vGPU on
// device 0 the second allocation failed (CUDA_ERROR_OUT_OF_MEMORY from the device).
TEST(ShimPlacement, EachVgpuAllocatesOnTheGpuTheArbiterAssigned) {
  TempDir dir;
  const Simcuda simcuda("placement", "2x1GiB");
  ArbiterProcess arb{dir, {"--slice", "5ms", "--policy", "fifo"}};
  arb.env = simcuda.env();
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  std::vector<std::unique_ptr<test::SwapProbe>> probes;
  for (const char* name : {"p0", "p1"}) {
    const std::string log = dir / (std::string(name) + ".log");
    probes.push_back(std::make_unique<test::SwapProbe>(
        PROBE_BIN, 5, 0, 600, EnvMap(ShimEnv(simcuda, arb.socket(), "700MiB", name, log)), LineWait()));
    ASSERT_TRUE(probes.back()->ready()) << probes.back()->ready_line() << ReadFile(log)
                                        << ReadFile(arb.log()) << probes.back()->WhyItStopped();
  }
  for (auto& probe : probes) {
    const test::Verified v = probe->Verify();
    ASSERT_TRUE(v.answered) << probe->WhyItStopped() << ReadFile(arb.log());
    EXPECT_TRUE(v.intact()) << v.line;
    EXPECT_EQ(probe->Quit(ExitWait()), 0) << probe->process().err();
  }
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  for (const auto& gpu : summary["gpus"]) EXPECT_EQ(gpu["overshoot_events"], 0) << summary.dump();
}

}  // namespace
}  // namespace gshare::arbiter::testing
