// Co-running (issue 20) with real processes: a real gshare-arbiter on simcuda with GPU 0 marked
// for co-running starts its private MPS daemon (simcuda-mps-control), two unmodified programs of
// one uid under the shim come up as MPS clients of it (their registration reports the share),
// and the policy grants the GPU to both at once: their kernels overlap in time, which simcuda's
// MPS mode lets happen only between MPS clients. Without the daemon the same programs run
// time-sliced (no overlap, no co-run grant); a daemon killed is restarted; the arbiter's
// shutdown stops it.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "gshare/arbiter/control_client.h"
#include "gshare/shm/futex.h"
#include "shim_test_env.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Interval {
  unsigned long long start = 0, end = 0;
};

// A probe serving `count` bursts; the intervals its kernels ran in (the last kernel_ms of each
// burst's call) once it is done.
class BurstProbe {
 public:
  BurstProbe(std::vector<std::string> env, int count, int kernel_ms, int gap_ms, int fault_at = -1)
      : child_({PROBE_BIN, "bursts", std::to_string(count), std::to_string(kernel_ms),
                std::to_string(gap_ms), std::to_string(fault_at)},
               EnvMap(env)),
        kernel_ns_(static_cast<unsigned long long>(kernel_ms) * 1'000'000ULL) {}
  // Reads the probe's lines up to "done"; false if it ended or stalled before.
  bool Run() {
    std::string line;
    while (child_.ReadLine(&line, LineWait())) {
      if (line.rfind("mps_enabled=", 0) == 0) mps_enabled_ = std::stoi(line.substr(12));
      Interval iv, gpu;
      int burst = 0, result = 0;
      const int fields = std::sscanf(
          line.c_str(), "burst=%d start_ns=%llu end_ns=%llu result=%d gpu_start_ns=%llu gpu_end_ns=%llu",
          &burst, &iv.start, &iv.end, &result, &gpu.start, &gpu.end);
      if (fields >= 4) {
        // The kernel's interval on the stream's clock where the probe could read it: the host's
        // end stamp is late by however long the probe was descheduled after the kernel ended,
        // which can make one holder's kernel seem to overlap the next holder's.
        if (fields == 6 && gpu.end > 0) iv = gpu;
        // The kernel ran in the last kernel_ms of the interval (before: waiting for the token).
        iv.start = std::max(iv.start, iv.end - kernel_ns_);
        bursts_.push_back(iv);
      }
      if (line.rfind("done errors=", 0) == 0) errors_ = std::stoi(line.substr(12));
      if (line.rfind("done errors=0", 0) == 0) return true;
      if (line.rfind("error", 0) == 0) error_line_ = line;
      if (line.rfind("done", 0) == 0 || line.rfind("error", 0) == 0) return false;
    }
    return false;
  }
  int Wait() { return child_.Wait(ExitWait()); }
  int mps_enabled() const { return mps_enabled_; }
  int errors() const { return errors_; }
  const std::string& error_line() const { return error_line_; }  // "" when none
  const std::vector<Interval>& bursts() const { return bursts_; }

 private:
  test::ChildProcess child_;
  unsigned long long kernel_ns_;
  int mps_enabled_ = -1;
  int errors_ = -1;
  std::string error_line_;
  std::vector<Interval> bursts_;
};

// Pairs of bursts of a and b that ran at the same time for at least `min_ns`.
int Overlaps(const std::vector<Interval>& a, const std::vector<Interval>& b, unsigned long long min_ns) {
  int n = 0;
  for (const Interval& x : a)
    for (const Interval& y : b) {
      const unsigned long long lo = std::max(x.start, y.start), hi = std::min(x.end, y.end);
      n += hi > lo && hi - lo >= min_ns ? 1 : 0;
    }
  return n;
}

class ShimCorun : public ::testing::Test {
 protected:
  ShimCorun() : simcuda(::testing::UnitTest::GetInstance()->current_test_info()->name(), "1x512MiB") {}
  void SetUp() override {
    ASSERT_EQ(::mkdir((dir / "mps").c_str(), 0755), 0);
    arb.env = simcuda.env();
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  }
  // The reply, or an empty object when the call failed (a poll simply tries again).
  nlohmann::json Call(const std::string& cmd) {
    auto reply = ControlCall(dir / "control.sock", {{"cmd", cmd}}, seconds(10));
    return reply.ok() && reply->is_object() ? *reply : nlohmann::json::object();
  }
  // GPU 0's MPS daemon as the status shows it, once `pred` holds (safety net, scaled).
  template <typename Pred>
  nlohmann::json DaemonWhen(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + Scaled(seconds(30));
    nlohmann::json mps;
    do {
      const nlohmann::json status = Call("status");
      if (status.contains("gpus") && status["gpus"].is_array() && !status["gpus"].empty() &&
          status["gpus"][0].contains("corun"))
        mps = status["gpus"][0]["corun"].value("mps", nlohmann::json());
      if (!mps.is_null() && pred(mps)) return mps;
      std::this_thread::sleep_for(milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    return mps;
  }
  // GPU 0's daemon once it serves clients: started, and its state file and control socket in
  // its pipe directory (simcuda's, as nvidia-cuda-mps-control's). "running" alone is true from
  // the spawn on: a client starting before the daemon serves silently runs time-sliced.
  nlohmann::json ServingDaemon() {
    return DaemonWhen([](const nlohmann::json& m) {
      if (!m.value("running", false) || !m.contains("pipe_dir") || !m["pipe_dir"].is_string()) return false;
      const std::string pipe = m["pipe_dir"].get<std::string>();
      struct stat st {};
      return ::stat((pipe + "/simcuda-mps").c_str(), &st) == 0 &&
             ::stat((pipe + "/control").c_str(), &st) == 0;
    });
  }
  // A function under the shim: an MPS client of the arbiter's daemon at a 25% share (declared
  // to use 20% of the SMs), or, `mps` false, pointed at a pipe directory no daemon serves.
  std::vector<std::string> FunctionEnv(const std::string& name, bool mps) {
    std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "64MiB", name, dir / (name + ".log"));
    env.push_back("GSHARE_SLO_MS=500");
    AddMpsEnv(env, dir, mps, 25);
    env.push_back("GSHARE_CORUN_DEMAND=compute=20,bandwidth=5");
    return env;
  }

  // Puts both probes' bursts on one clock (GSHARE_PROBE_BURST_EPOCH_NS, 200 ms from now): they
  // ask for the GPU at the same moments.
  static void OneEpoch(std::vector<std::string>& a, std::vector<std::string>& b) {
    const std::string epoch = "GSHARE_PROBE_BURST_EPOCH_NS=" +
                              std::to_string(shm::MonotonicNowNs() + 200'000'000ULL);
    a.push_back(epoch);
    b.push_back(epoch);
  }
  // Runs both probes to their end at once (their logs: <name>.log).
  void RunBoth(BurstProbe& a, const std::string& name_a, BurstProbe& b, const std::string& name_b) {
    std::thread ta([&] { EXPECT_TRUE(a.Run()) << ReadFile(dir / (name_a + ".log")); });
    std::thread tb([&] { EXPECT_TRUE(b.Run()) << ReadFile(dir / (name_b + ".log")); });
    ta.join();
    tb.join();
  }

  TempDir dir;
  Simcuda simcuda;
  ArbiterProcess arb{dir, CorunArbiterArgs(dir)};
};

TEST_F(ShimCorun, TwoMpsClientsOfOneUidRunTheirKernelsAtOnce) {
  const nlohmann::json daemon = ServingDaemon();
  ASSERT_TRUE(daemon.value("running", false)) << daemon.dump() << ReadFile(arb.log());
  EXPECT_EQ(daemon["pipe_dir"], dir / "mps/gpu0/pipe");
  // Long enough for the policy to learn both and co-run; short bursts with gaps (each busy
  // about a third of the time: light enough that the policy's load bound admits co-running
  // even when a loaded machine stretches the bursts), on one clock (one epoch): both ask for
  // the GPU at the same moments, so every co-run grant overlaps nearly a whole kernel. (Left
  // to collide by chance, a slow machine saw a few joins late in the other's kernel, none
  // overlapping by 10 ms: 4 of 39 ASan runs.)
  std::vector<std::string> env_a = FunctionEnv("cnn-a", true), env_b = FunctionEnv("cnn-b", true);
  OneEpoch(env_a, env_b);
  BurstProbe a(env_a, 80, 20, 40);
  BurstProbe b(env_b, 80, 20, 40);
  std::thread ta([&] { EXPECT_TRUE(a.Run()) << ReadFile(dir / "cnn-a.log"); });
  std::thread tb([&] { EXPECT_TRUE(b.Run()) << ReadFile(dir / "cnn-b.log"); });
  // Both registered as MPS clients at the share their environment gave them.
  const auto deadline = std::chrono::steady_clock::now() + Scaled(seconds(30));
  nlohmann::json clients;
  do {
    clients = Call("clients").value("clients", nlohmann::json::array());
    if (clients.size() == 2) break;
    std::this_thread::sleep_for(milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  ta.join();
  tb.join();
  ASSERT_EQ(clients.size(), 2u) << clients.dump();
  for (const auto& c : clients) EXPECT_EQ(c["mps_share"], 25) << clients.dump();
  EXPECT_EQ(a.mps_enabled(), 1) << ReadFile(dir / "cnn-a.log");
  EXPECT_EQ(b.mps_enabled(), 1) << ReadFile(dir / "cnn-b.log");
  EXPECT_EQ(a.Wait(), 0);
  EXPECT_EQ(b.Wait(), 0);
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_GE(summary["corun_joins"].get<uint64_t>(), 1u) << summary.dump() << ReadFile(arb.log());
  // Overlapping by more than a quarter of a kernel: only co-running lets that happen (time
  // slicing hands the GPU over between bursts, simcuda serialises non-MPS kernels).
  EXPECT_GE(Overlaps(a.bursts(), b.bursts(), 10'000'000ULL), 1) << summary.dump() << ReadFile(arb.log());
  // The arbiter's shutdown stopped its daemon.
  EXPECT_NE(::kill(daemon["pid"].get<pid_t>(), 0), 0) << ReadFile(arb.log());
}

// MPS's fault domain: a fatal fault of one co-runner reaches the other (its later work fails
// too); both leave, the arbiter forgets them and frees the GPU, and a new function of the same
// uid then runs there (the MPS server accepts clients again once all have exited).
TEST_F(ShimCorun, AFaultInOneCoRunnerReachesTheOtherAndTheArbiterRecoversBoth) {
  const nlohmann::json daemon = ServingDaemon();
  ASSERT_TRUE(daemon.value("running", false)) << daemon.dump() << ReadFile(arb.log());
  // b serves twice as many bursts as a, so that it is still running when a
  // faults however the two are delayed on a loaded machine (with as many, b could finish first
  // and never see it); its failed bursts end quickly.
  BurstProbe a(FunctionEnv("cnn-a", true), 60, 20, 40, /*fault_at=*/30);
  BurstProbe b(FunctionEnv("cnn-b", true), 120, 20, 40);
  std::thread ta([&] { EXPECT_FALSE(a.Run()); });
  std::thread tb([&] { EXPECT_FALSE(b.Run()) << "the co-runner never saw the fault"; });
  ta.join();
  tb.join();
  EXPECT_GE(a.errors(), 1);
  EXPECT_GE(b.errors(), 1) << ReadFile(dir / "cnn-b.log");
  EXPECT_NE(a.Wait(), 0);
  EXPECT_NE(b.Wait(), 0);
  const auto deadline = std::chrono::steady_clock::now() + Scaled(seconds(30));
  nlohmann::json status;
  do {
    status = Call("status");
    if (status.value("clients", -1) == 0) break;
    std::this_thread::sleep_for(milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(status.value("clients", -1), 0) << status.dump();
  ASSERT_TRUE(status.contains("gpus")) << status.dump();
  EXPECT_TRUE(status["gpus"][0]["holders"].empty()) << status.dump();
  BurstProbe c(FunctionEnv("cnn-c", true), 5, 10, 10);
  EXPECT_TRUE(c.Run()) << ReadFile(dir / "cnn-c.log");
  EXPECT_EQ(c.mps_enabled(), 1);
  EXPECT_EQ(c.Wait(), 0);
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["invariant_violations"], 0) << summary.dump();
}

TEST_F(ShimCorun, WithoutTheDaemonTheSameProgramsRunTimeSliced) {
  BurstProbe a(FunctionEnv("cnn-a", false), 30, 20, 20);
  BurstProbe b(FunctionEnv("cnn-b", false), 30, 20, 20);
  RunBoth(a, "cnn-a", b, "cnn-b");
  EXPECT_EQ(a.mps_enabled(), 0);  // fail-open: the program runs, without MPS
  // The share answer named GPU 0's daemon, but the pipe directory the environment gave is kept
  // (an explicit setting wins, as for the share) and the shim says so, naming both.
  EXPECT_TRUE(LogHas(dir / "cnn-a.log", "CUDA_MPS_PIPE_DIRECTORY=" + dir / "no-daemon" +
                                            " from the environment is kept (an explicit setting "
                                            "wins), but the arbiter co-runs this function on GPU 0, "
                                            "whose MPS daemon is at " + dir / "mps/gpu0/pipe"))
      << ReadFile(dir / "cnn-a.log");
  EXPECT_EQ(a.Wait(), 0);
  EXPECT_EQ(b.Wait(), 0);
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["corun_joins"], 0) << summary.dump();
  EXPECT_EQ(Overlaps(a.bursts(), b.bursts(), 10'000'000ULL), 0);
}

// An MPS share is the shim's word: the arbiter believes it for co-running only once its GPU's
// daemon lists the process among its clients (asked after a solo burst). A program whose
// environment points at another daemon serving the same GPU (an operator's own) is an MPS
// client, but not of the arbiter's daemon: it must not co-run with that daemon's clients (two
// MPS servers time-slice each other). "stranger" is that program, "member" a client of the
// arbiter's daemon; they ask for the GPU at the same moments, and no set forms. Without the
// check, both reported shares were believed and they co-ran (corun_joins > 0).
TEST_F(ShimCorun, AClientOfAnotherDaemonIsNotBelievedAndCoRunsWithNobody) {
  ASSERT_TRUE(ServingDaemon().value("running", false)) << ReadFile(arb.log());
  std::vector<std::string> daemon_env = simcuda.env();
  daemon_env.push_back("CUDA_MPS_PIPE_DIRECTORY=" + dir / "other/pipe");
  daemon_env.push_back("CUDA_MPS_LOG_DIRECTORY=" + dir / "other/log");
  ASSERT_EQ(::mkdir((dir / "other").c_str(), 0755), 0);
  test::ChildProcess other({MPS_CONTROL_BIN, "-f"}, EnvMap(daemon_env));
  ASSERT_TRUE(WaitForFile(dir / "other/pipe/simcuda-mps", Scaled(seconds(30))) &&
              WaitForFile(dir / "other/pipe/control", Scaled(seconds(30))))
      << other.err();
  std::vector<std::string> env_s = FunctionEnv("stranger", true), env_m = FunctionEnv("member", true);
  for (std::string& kv : env_s)
    if (kv.rfind("CUDA_MPS_PIPE_DIRECTORY=", 0) == 0) kv = "CUDA_MPS_PIPE_DIRECTORY=" + dir / "other/pipe";
  OneEpoch(env_s, env_m);
  BurstProbe a(env_s, 40, 20, 40);
  BurstProbe b(env_m, 40, 20, 40);
  RunBoth(a, "stranger", b, "member");
  EXPECT_EQ(a.mps_enabled(), 1) << ReadFile(dir / "stranger.log");  // an MPS client, elsewhere
  EXPECT_EQ(b.mps_enabled(), 1) << ReadFile(dir / "member.log");
  const nlohmann::json clients = Call("clients").value("clients", nlohmann::json::array());
  for (const auto& c : clients)
    EXPECT_EQ(c["mps_check"], c["function"] == "stranger" ? "not served" : "served") << clients.dump();
  EXPECT_EQ(a.Wait(), 0);
  EXPECT_EQ(b.Wait(), 0);
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["corun_joins"], 0) << summary.dump() << ReadFile(arb.log());
  EXPECT_EQ(summary["mps_clients_unserved"], 1) << summary.dump();
  EXPECT_NE(ReadFile(arb.log()).find("'stranger' (pid " ), std::string::npos);
  EXPECT_NE(ReadFile(arb.log()).find("reports an MPS share of 25%, but GPU 0's MPS daemon does not "
                                     "serve its process"),
            std::string::npos)
      << ReadFile(arb.log());
  EXPECT_NE(ReadFile(arb.log()).find("'member' (pid "), std::string::npos);
  EXPECT_NE(ReadFile(arb.log()).find("GPU 0's MPS daemon serves it (its 25% share confirmed)"),
            std::string::npos)
      << ReadFile(arb.log());
  ::kill(other.pid(), SIGTERM);
}

TEST_F(ShimCorun, AKilledDaemonIsRestarted) {
  const nlohmann::json first = DaemonWhen([](const nlohmann::json& m) { return m.value("running", false); });
  ASSERT_TRUE(first.value("running", false)) << first.dump() << ReadFile(arb.log());
  const pid_t pid = first["pid"].get<pid_t>();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const nlohmann::json again = DaemonWhen([&](const nlohmann::json& m) {
    return m.value("running", false) && m.value("restarts", 0) == 1 && m["pid"].get<pid_t>() != pid;
  });
  EXPECT_EQ(again.value("restarts", 0), 1) << again.dump() << ReadFile(arb.log());
  EXPECT_TRUE(again.value("running", false)) << again.dump();
  EXPECT_NE(ReadFile(arb.log()).find("killed by signal"), std::string::npos) << ReadFile(arb.log());
  const pid_t second = again["pid"].get<pid_t>();
  EXPECT_TRUE(arb.Stop().is_object());
  EXPECT_NE(::kill(second, 0), 0);  // stopped with the arbiter
}

// The probes' shared burst clock is test input too: a malformed one is an error naming it, not
// bursts at random moments (which would make the overlap tests pass or fail by chance again).
TEST_F(ShimCorun, AMalformedBurstEpochIsAnErrorNamingTheVariable) {
  std::vector<std::string> env = FunctionEnv("cnn-a", false);
  env.push_back("GSHARE_PROBE_BURST_EPOCH_NS=12x");
  BurstProbe a(env, 2, 1, 1);
  EXPECT_FALSE(a.Run());
  EXPECT_NE(a.error_line().find("GSHARE_PROBE_BURST_EPOCH_NS='12x'"), std::string::npos)
      << a.error_line();
  const int status = a.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_TRUE(arb.Stop().is_object());
}

TEST_F(ShimCorun, MalformedDemandFailsCuInitNamingTheVariable) {
  std::vector<std::string> env = FunctionEnv("cnn-a", true);
  env.push_back("GSHARE_CORUN_DEMAND=compute=150");
  test::ChildProcess p({PROBE_BIN, "init"}, EnvMap(env));
  p.Wait(ExitWait());
  EXPECT_NE(p.out().find("init=1"), std::string::npos) << p.out();  // CUDA_ERROR_INVALID_VALUE
  EXPECT_NE(ReadFile(dir / "cnn-a.log").find("GSHARE_CORUN_DEMAND"), std::string::npos)
      << ReadFile(dir / "cnn-a.log");
  EXPECT_TRUE(arb.Stop().is_object());
}

}  // namespace
}  // namespace gshare::arbiter::testing
