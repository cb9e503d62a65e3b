// The MPS share chosen before the real cuInit (issue 20; docs/arbiter.md, "Co-running";
// docs/protocol.md, "Share query"), with real processes: a real gshare-arbiter on simcuda with
// GPU 0 marked for co-running runs its private simcuda-mps-control; unmodified programs under
// the shim (tests/preload's preload_probe, "swap" mode) declare their demands
// (GSHARE_CORUN_DEMAND=compute=20: the policy's share class is 25%) and initialise CUDA:
//  - with no share in its environment the probe comes up as an MPS client at the arbiter's
//    choice: simcuda's driver says "share 25%" at its cuInit, and the clients list shows
//    mps_share = share_advice = 25 (without the feature: 100, the driver's default);
//  - an explicit CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=75 is kept (mps_share 75) and the shim's log
//    reports the disagreement naming the variable and both values;
//  - an arbiter socket that never answers leaves the environment alone within the bound
//    (GSHARE_SHARE_QUERY): the driver runs at 100%, the shim's log says why and how long it
//    waited;
//  - an answer that breaks the protocol (a share of 250%) is logged as an error naming the
//    problem, and the environment is left alone;
//  - an answer of "not co-run" replaces the CUDA_MPS_PIPE_DIRECTORY the environment names, so
//    the process comes up time-sliced instead of joining that daemon.
// Every wait is a safety net (polls of replies and logs), never a measurement.
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "gshare/shm/registration.h"
#include "gshare/shm/wire.h"
#include "shim_mps_fixture.h"
#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

class ShimMpsShare : public ShimMpsArbiter {
 protected:
  // A swap-mode probe under the shim, an MPS client candidate of the arbiter's daemon declaring
  // compute=20,bandwidth=10; `share` 0: none in its environment. `socket`: the arbiter socket
  // it is given ("" = the arbiter's); `extra`: more of its environment ("K=V").
  std::unique_ptr<test::SwapProbe> StartProbe(const std::string& name, int share,
                                              const std::string& socket = "",
                                              const std::vector<std::string>& extra = {}) {
    std::vector<std::string> env = ShimEnv(simcuda, socket.empty() ? arb.socket() : socket,
                                           "200MiB", name, dir / (name + ".log"));
    AddMpsEnv(env, dir, true, share);
    env.push_back("GSHARE_CORUN_DEMAND=compute=20,bandwidth=10");
    env.push_back("GSHARE_REGISTER_RETRY=0");
    env.push_back("SIMCUDA_LOG_LEVEL=info");  // its "MPS client ..., share N%" line at cuInit
    env.insert(env.end(), extra.begin(), extra.end());
    auto p = std::make_unique<test::SwapProbe>(PROBE_BIN, 7, 2, 16, EnvMap(env), LineWait());
    EXPECT_TRUE(p->ready()) << p->ready_line() << ReadFile(dir / (name + ".log"));
    return p;
  }
  // The probe's stderr after it quit (simcuda's log).
  static std::string QuitAndStderr(test::SwapProbe& p) {
    EXPECT_EQ(p.Quit(ExitWait()), 0) << p.process().err();
    return p.process().err();
  }
};

constexpr char kShareVar[] = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";

TEST_F(ShimMpsShare, AProbeWithNoShareInItsEnvironmentComesUpAtTheArbitersChoice) {
  auto p = StartProbe("small", 0);
  ASSERT_TRUE(p->ready());
  const json c = ClientWhen("small", [](const json& e) { return e.value("mps_share", 0) != 0; });
  ASSERT_TRUE(c.is_object()) << ReadFile(arb.log()) << ReadFile(dir / "small.log");
  EXPECT_EQ(c.value("share_advice", 0), 25) << c.dump();
  EXPECT_EQ(c.value("mps_share", 0), c.value("share_advice", -1)) << c.dump();
  EXPECT_EQ(Counter("share_queries"), 1u);
  EXPECT_TRUE(LogHas(dir / "small.log", std::string(kShareVar) + "=25 set from the arbiter's share class for GPU 0"))
      << ReadFile(dir / "small.log");
  EXPECT_TRUE(LogHas(arb.log(), "share query answered: GPU 0, co-run at 25%")) << ReadFile(arb.log());
  std::smatch m;  // how long cuInit waited for the answer (reported, not checked)
  const std::string text = ReadFile(dir / "small.log");
  if (std::regex_search(text, m, std::regex("answered in ([0-9]+) us")))
    RecordProperty("answer_us", m[1].str());
  const std::string err = QuitAndStderr(*p);
  EXPECT_NE(err.find("share 25%"), std::string::npos) << err;  // the driver took it at cuInit
  const json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["share_queries"], 1) << summary.dump();
  EXPECT_EQ(summary["invariant_violations"], 0) << summary.dump();
}

TEST_F(ShimMpsShare, AnExplicitShareIsKeptAndTheDisagreementIsReported) {
  auto p = StartProbe("explicit", 75);
  ASSERT_TRUE(p->ready());
  const json c = ClientWhen("explicit", [](const json& e) { return e.value("mps_share", 0) != 0; });
  ASSERT_TRUE(c.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(c.value("mps_share", 0), 75) << c.dump();  // the operator's setting wins
  EXPECT_EQ(c.value("share_advice", 0), 25) << c.dump();
  const std::string log = dir / "explicit.log";
  EXPECT_TRUE(LogHas(log, std::string(kShareVar) + "=75 from the environment is kept")) << ReadFile(log);
  EXPECT_TRUE(LogHas(log, "the arbiter chose 25% for this function on GPU 0")) << ReadFile(log);
  const std::string err = QuitAndStderr(*p);
  EXPECT_NE(err.find("share 75%"), std::string::npos) << err;
}

TEST_F(ShimMpsShare, AnArbiterThatNeverAnswersLeavesTheEnvironmentAloneWithinTheBound) {
  // A socket that listens and never accepts: the query connects and is never answered.
  auto silent = shm::RegistrationListener::Listen(dir / "silent.sock", 0600);
  ASSERT_TRUE(silent.ok()) << silent.status().ToString();
  auto p = StartProbe("unanswered", 0, dir / "silent.sock", {"GSHARE_SHARE_QUERY=300ms"});
  ASSERT_TRUE(p->ready());
  const std::string log = dir / "unanswered.log";
  ASSERT_TRUE(LogHas(log, "no MPS share from the arbiter at " + dir / "silent.sock")) << ReadFile(log);
  EXPECT_TRUE(LogHas(log, std::string(kShareVar) + " is left as the environment has it (unset)"))
      << ReadFile(log);
  std::smatch m;
  const std::string text = ReadFile(log);
  ASSERT_TRUE(std::regex_search(text, m, std::regex("after ([0-9]+) us"))) << text;
  const long waited_us = std::stol(m[1]);
  RecordProperty("waited_us", static_cast<int>(waited_us));
  EXPECT_GE(waited_us, 290'000) << text;  // the bound, and not much more
  EXPECT_LT(waited_us, 300'000 + Scaled(std::chrono::milliseconds(2000)).count() * 1000) << text;
  const std::string err = QuitAndStderr(*p);
  EXPECT_NE(err.find("share 100%"), std::string::npos) << err;  // the driver's default
  EXPECT_EQ(Counter("share_queries"), 0u);  // the real arbiter was never asked
}

TEST_F(ShimMpsShare, AnAnswerThatBreaksTheProtocolIsAClearErrorAndLeavesTheEnvironmentAlone) {
  // A fake arbiter answering every connection with a share answer of 250%.
  auto fake = shm::RegistrationListener::Listen(dir / "fake.sock", 0600);
  ASSERT_TRUE(fake.ok()) << fake.status().ToString();
  shm::ShareAnswer answer;
  answer.gpu = 0;
  answer.corun = true;
  answer.share_pct = 25;
  answer.arbiter_epoch = 1;
  auto bytes = shm::EncodeShareAnswer(answer);
  ASSERT_TRUE(bytes.ok());
  const uint32_t bad_share = 250;
  std::memcpy(bytes->data() + offsetof(shm::ShareAnswerWire, share_pct), &bad_share, sizeof(bad_share));
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::thread server([&] {
    while (!stop.load()) {
      auto conn = fake->Accept(std::chrono::milliseconds(50));
      if (!conn.ok()) continue;
      (void)conn->ReceiveOpening(std::chrono::seconds(2));
      if (::send(conn->fd(), bytes->data(), bytes->size(), MSG_NOSIGNAL) > 0) ++answered;
    }
  });
  auto p = StartProbe("garbled", 0, dir / "fake.sock");
  const std::string log = dir / "garbled.log";
  EXPECT_TRUE(p->ready());
  EXPECT_TRUE(LogHas(log, "answered the MPS share query with a bad message")) << ReadFile(log);
  EXPECT_TRUE(LogHas(log, "share_pct 250 is not a percentage 1..100")) << ReadFile(log);
  EXPECT_TRUE(LogHas(log, std::string(kShareVar) + " is left as the environment has it (unset)"))
      << ReadFile(log);
  const std::string err = QuitAndStderr(*p);
  stop.store(true);
  server.join();
  EXPECT_GE(answered.load(), 1);
  EXPECT_NE(err.find("share 100%"), std::string::npos) << err;
}

// An answer of "not co-run" keeps the process off the daemon its environment names: the test
// asks for a share of 600 MiB of the 1 GiB GPU (answered: co-run; the promise stands 10 s), so
// "second" (600 MiB more, which would not fit beside that MPS memory) is answered "not co-run";
// its shim replaces the CUDA_MPS_PIPE_DIRECTORY it was given (the arbiter's daemon) and says so,
// and it comes up time-sliced: no MPS client line from the driver, mps_share 0 in the clients
// list. Before, the variable was left alone and second joined the daemon whatever the answer.
TEST_F(ShimMpsShare, ANotCorunAnswerKeepsTheProcessOffTheDaemonItsEnvironmentNames) {
  shm::ShareQuery q;
  q.quota_bytes = 600ULL << 20;
  q.slo_ms = 100;
  q.function_name = "promised";
  const auto promised = shm::QueryShare(arb.socket(), q, Scaled(seconds(10)));
  ASSERT_TRUE(promised.ok()) << promised.status().ToString();
  ASSERT_TRUE(promised->corun) << promised->reason;
  auto second = StartProbe("second", 0, "", {"GSHARE_VGPU_MEMORY=600MiB"});
  ASSERT_TRUE(second->ready());
  const json b = ClientWhen("second", [](const json& e) { return e.is_object(); });
  ASSERT_TRUE(b.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(b.value("mps_share", -1), 0) << b.dump();
  const std::string log = dir / "second.log";
  EXPECT_TRUE(LogHas(log, "CUDA_MPS_PIPE_DIRECTORY=" + dir / "mps/gpu0/pipe" +
                              " from the environment is replaced by /nonexistent/gshare-no-mps"))
      << ReadFile(log);
  EXPECT_TRUE(LogHas(arb.log(), "do not fit beside")) << ReadFile(arb.log());
  const std::string err = QuitAndStderr(*second);
  EXPECT_EQ(err.find("MPS client of daemon"), std::string::npos) << err;
}

}  // namespace
}  // namespace gshare::arbiter::testing
