// Several GPUs marked for co-running (issue 20; docs/arbiter.md, "Co-running"), with real
// processes: a real gshare-arbiter on two simcuda GPUs, both marked, runs one private
// simcuda-mps-control per GPU (CUDA_VISIBLE_DEVICES naming that GPU alone); unmodified programs
// under the shim (tests/preload's preload_probe, "swap" mode) declare their demands and are given
// no CUDA_MPS_* variable at all. The share answer names the GPU (ordinal and UUID) and its
// daemon's pipe directory; the shim points the process at that daemon, and after cuInit maps the
// arbiter's GPU to the process's device: simcuda, like NVIDIA's MPS, shows a client only its
// daemon's GPU, as device 0. So:
//  - the first probe registers on GPU 0 and the second on GPU 1, each an MPS client of its own
//    GPU's daemon at the arbiter's share (simcuda's driver says which daemon, and which registry
//    device it sees as 0); without the pipe directory in the answer neither would be an MPS
//    client (mps_share 0), and without the device map the second's vGPU would be put on its
//    device 1, which it cannot see;
//  - both keep their data at the same addresses through their bursts, and the arbiter's books
//    hold (no invariant violation);
//  - the same when the arbiter does not know the GPUs' UUIDs (gpu_memory: it never asks the
//    driver): the shim then takes the one device of an MPS client of the answer's daemon.
// Every wait is a safety net (polls of replies and logs), never a measurement.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "gshare/arbiter/control_client.h"
#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using json = nlohmann::json;

// `uuids`: the arbiter asks simcuda's driver for its GPUs (and their UUIDs); else it is told
// their size (gpu_memory) and never asks, so its answers name no UUID and the shim finds the
// device as the one device of an MPS client of the answer's daemon.
std::vector<std::string> TwoMarkedGpus(const TempDir& dir, bool uuids) {
  std::vector<std::string> args = CorunArbiterArgs(dir);
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--corun-gpus") args[i + 1] = "0,1";
  if (!uuids) args.insert(args.end(), {"--gpu-memory", "1GiB", "--gpu-count", "2"});
  return args;
}

class ShimMpsGpus : public ::testing::TestWithParam<bool> {
 protected:
  ShimMpsGpus()
      : simcuda(GetParam() ? "mps-gpus-uuid" : "mps-gpus-no-uuid", "2x1GiB") {}
  void SetUp() override {
    ASSERT_EQ(::mkdir((dir / "mps").c_str(), 0755), 0);
    arb.env = simcuda.env();
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
    const auto wait = Scaled(std::chrono::seconds(30));
    for (const char* gpu : {"gpu0", "gpu1"}) {
      const std::string pipe = dir / ("mps/" + std::string(gpu) + "/pipe");
      ASSERT_TRUE(WaitForFile(pipe + "/simcuda-mps", wait) && WaitForFile(pipe + "/control", wait))
          << gpu << "'s daemon does not serve\n" << ReadFile(arb.log());
    }
    for (const json& g : Call({{"cmd", "status"}}).value("gpus", json::array()))
      daemons.push_back(g.value("corun", json::object()).value("mps", json::object()).value("pid", 0));
  }
  // The arbiter stops its daemons at shutdown; one left behind is killed and reported.
  void TearDown() override {
    if (arb.pid() > 0) (void)arb.Stop();
    for (pid_t pid : daemons) {
      if (pid > 0 && ::kill(pid, 0) == 0) {
        ADD_FAILURE() << "the MPS daemon " << pid << " outlived the arbiter";
        ::kill(pid, SIGKILL);
      }
    }
  }

  json Call(const json& request) {
    auto reply = ControlCall(dir / "control.sock", request, std::chrono::seconds(10));
    return reply.ok() && reply->is_object() ? *reply : json::object();
  }
  // Polls the clients list until `name` registered as an MPS client (safety net); its entry.
  json McsClient(const std::string& name) {
    const auto deadline = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(30));
    json last;
    do {
      for (const json& c : Call({{"cmd", "clients"}}).value("clients", json::array()))
        if (c.value("function", "") == name) last = c;
      if (last.is_object() && last.value("mps_share", 0) != 0) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return last;
  }
  // A swap-mode probe under the shim declaring compute=20,bandwidth=10 (share class 25%), with
  // no CUDA_MPS_* variable in its environment.
  std::unique_ptr<test::SwapProbe> StartProbe(const std::string& name, uint32_t seed) {
    std::vector<std::string> env =
        ShimEnv(simcuda, arb.socket(), "200MiB", name, dir / (name + ".log"));
    env.push_back("GSHARE_CORUN_DEMAND=compute=20,bandwidth=10");
    env.push_back("GSHARE_REGISTER_RETRY=0");
    env.push_back("SIMCUDA_LOG_LEVEL=info");  // its "MPS client of daemon ..." line at cuInit
    auto p = std::make_unique<test::SwapProbe>(PROBE_BIN, seed, 2, 16, EnvMap(env), LineWait());
    EXPECT_TRUE(p->ready()) << p->ready_line() << ReadFile(dir / (name + ".log"));
    return p;
  }

  TempDir dir;
  Simcuda simcuda;
  ArbiterProcess arb{dir, TwoMarkedGpus(dir, GetParam())};
  std::vector<pid_t> daemons;
};

TEST_P(ShimMpsGpus, EachProcessJoinsTheDaemonOfTheGpuItsShareAnswerNames) {
  auto first = StartProbe("first", 31);
  ASSERT_TRUE(first->ready());
  const json a = McsClient("first");  // registered before the second asks: GPU 0 is fuller
  auto second = StartProbe("second", 32);
  ASSERT_TRUE(second->ready());
  const json b = McsClient("second");
  ASSERT_TRUE(a.is_object() && b.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(a.value("mps_share", 0), 25) << a.dump() << ReadFile(dir / "first.log");
  EXPECT_EQ(b.value("mps_share", 0), 25) << b.dump() << ReadFile(dir / "second.log");
  EXPECT_EQ(a.value("gpu", -1), 0) << a.dump();
  EXPECT_EQ(b.value("gpu", -1), 1) << b.dump();
  for (const auto& [name, gpu] : {std::pair<std::string, int>{"first", 0}, {"second", 1}}) {
    const std::string pipe = dir / ("mps/gpu" + std::to_string(gpu) + "/pipe");
    EXPECT_TRUE(LogHas(dir / (name + ".log"), "CUDA_MPS_PIPE_DIRECTORY=" + pipe + " set"))
        << ReadFile(dir / (name + ".log"));
  }
  EXPECT_TRUE(LogHas(dir / "second.log", "the arbiter's GPU 1 is this process's device 0"))
      << ReadFile(dir / "second.log");

  // Both served their bursts with their data at the same addresses.
  for (test::SwapProbe* p : {first.get(), second.get()}) {
    const test::Verified v = p->Verify();
    EXPECT_TRUE(v.intact()) << v.line;
    EXPECT_EQ(v.pointers, p->pointers());
  }
  ASSERT_EQ(first->Quit(ExitWait()), 0) << first->process().err();
  ASSERT_EQ(second->Quit(ExitWait()), 0) << second->process().err();
  // simcuda's driver at cuInit: which daemon each joined, and the registry device it sees as 0.
  EXPECT_NE(first->process().err().find(dir / "mps/gpu0/pipe; registry device 0 as 0), share 25%"),
            std::string::npos)
      << first->process().err();
  EXPECT_NE(second->process().err().find(dir / "mps/gpu1/pipe; registry device 1 as 0), share 25%"),
            std::string::npos)
      << second->process().err();
  const json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["share_queries"], 2) << summary.dump();
  EXPECT_EQ(summary["invariant_violations"], 0) << summary.dump();
}

INSTANTIATE_TEST_SUITE_P(ByUuidOrAsTheOnlyDevice, ShimMpsGpus, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("UuidKnown") : std::string("UuidUnknown");
                         });

}  // namespace
}  // namespace gshare::arbiter::testing
