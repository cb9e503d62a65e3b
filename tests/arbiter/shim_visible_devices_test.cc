// A program whose driver shows it only some GPUs, or in another order (CUDA_VISIBLE_DEVICES; a
// container given some GPUs looks the same to the shim), under the shim with a real arbiter on
// two simcuda GPUs: its registration names its devices by UUID, the arbiter places its vGPU on a
// GPU it sees and answers which GPU each of its devices is, and its memory lands there
// (docs/protocol.md, "Which GPU is which"). Before wire version 6 the arbiter took its device d
// for GPU d: the vGPU of a program seeing only GPU 1 was accounted on GPU 0 while its memory
// went to GPU 1, and a second program placed on GPU 1 then ran out of device memory there.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

// A probe with a 180 MiB quota that fills 150 MiB right after it registers (two do not fit on
// one 256 MiB GPU; small, so that two of them under TSan, whose shadow memory grows with every
// mapping, stay far from the machine's memory), with `visible` as its CUDA_VISIBLE_DEVICES
// ("" : unset).
std::unique_ptr<test::SwapProbe> StartFiller(const Simcuda& simcuda, const ArbiterProcess& arb,
                                             const TempDir& dir, const std::string& name,
                                             const std::string& visible) {
  std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "180MiB", name, dir / (name + ".log"));
  if (!visible.empty()) env.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  return std::make_unique<test::SwapProbe>(PROBE_BIN, 5, 0, 150, EnvMap(env), LineWait());
}

class ShimVisibleDevices : public ::testing::TestWithParam<const char*> {};

// The confined program registers first (both GPUs empty: without its devices named it went to
// GPU 0), then one that sees both GPUs, which goes to the GPU left empty in the arbiter's books.
TEST_P(ShimVisibleDevices, AProgramSeeingSomeGpusIsPlacedOnOneItSeesAndItsMemoryLandsThere) {
  const std::string visible = GetParam();
  TempDir dir;
  const Simcuda simcuda("visible", "2x256MiB");
  ArbiterProcess arb{dir, {"--slice", "5ms", "--policy", "fifo"}};
  arb.env = simcuda.env();
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  auto confined = StartFiller(simcuda, arb, dir, "confined", visible);
  ASSERT_TRUE(confined->ready()) << confined->ready_line() << ReadFile(dir / "confined.log")
                                 << ReadFile(arb.log()) << confined->WhyItStopped();
  auto other = StartFiller(simcuda, arb, dir, "other", "");
  ASSERT_TRUE(other->ready()) << other->ready_line() << ReadFile(dir / "other.log")
                              << ReadFile(arb.log()) << other->WhyItStopped();
  for (auto* probe : {confined.get(), other.get()}) {
    const test::Verified v = probe->Verify();
    ASSERT_TRUE(v.answered) << probe->WhyItStopped() << ReadFile(arb.log());
    EXPECT_TRUE(v.intact()) << v.line;
  }
  // The arbiter's books: the confined one on GPU 1 (its device 0), the other on GPU 0.
  const std::string arb_log = ReadFile(arb.log());
  EXPECT_NE(arb_log.find("'confined' pid " + std::to_string(confined->process().pid())), std::string::npos)
      << arb_log;
  EXPECT_NE(arb_log.find("GPU 1; confined to the GPUs its process sees (device 0 is GPU 1"), std::string::npos)
      << arb_log;
  EXPECT_NE(ReadFile(dir / "confined.log").find("this process's devices as the arbiter's GPUs: 0 = GPU 1"),
            std::string::npos)
      << ReadFile(dir / "confined.log");
  EXPECT_NE(ReadFile(dir / "other.log").find("registered with the arbiter as client 2 on GPU 0"),
            std::string::npos)
      << ReadFile(dir / "other.log");
  for (auto* probe : {confined.get(), other.get()}) EXPECT_EQ(probe->Quit(ExitWait()), 0) << probe->process().err();
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << arb_log;
  for (const auto& gpu : summary["gpus"]) EXPECT_EQ(gpu["overshoot_events"], 0) << summary.dump();
}

// "1": it sees GPU 1 alone; "1,0": both, in the other order (not the identity: it stays too).
INSTANTIATE_TEST_SUITE_P(Views, ShimVisibleDevices, ::testing::Values("1", "1,0"),
                         [](const auto& param_info) {
                           return std::string(param_info.param) == "1" ? std::string("OnlyGpu1")
                                                                 : std::string("BothReversed");
                         });

// A program that sees none of the arbiter's GPUs (the arbiter manages GPU 0 only; the program
// sees GPU 1) is refused with the reason, and runs stand-alone on its device.
TEST(ShimVisibleDevicesRefused, AProgramSeeingNoManagedGpuIsRefusedWithTheReason) {
  TempDir dir;
  const Simcuda simcuda("visible-none", "2x256MiB");
  ArbiterProcess arb{dir, {"--slice", "5ms", "--policy", "fifo", "--gpus", "0"}};
  arb.env = simcuda.env();
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  auto probe = StartFiller(simcuda, arb, dir, "elsewhere", "1");
  ASSERT_TRUE(probe->ready()) << probe->ready_line() << ReadFile(dir / "elsewhere.log") << ReadFile(arb.log());
  const test::Verified v = probe->Verify();
  ASSERT_TRUE(v.answered) << probe->WhyItStopped();
  EXPECT_TRUE(v.intact()) << v.line;
  const std::string why = "none of the 1 GPU(s) this process's driver shows it is one this arbiter manages";
  EXPECT_NE(ReadFile(dir / "elsewhere.log").find(why), std::string::npos) << ReadFile(dir / "elsewhere.log");
  EXPECT_NE(ReadFile(arb.log()).find(why), std::string::npos) << ReadFile(arb.log());
  EXPECT_EQ(probe->Quit(ExitWait()), 0) << probe->process().err();
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["registrations"], 0) << summary.dump();
}

}  // namespace
}  // namespace gshare::arbiter::testing
