// Re-registration of a program whose vGPU is swapped out when its arbiter goes (fail-closed: it
// stays out while no arbiter runs) with the real shim and a real gshare-arbiter on simcuda. The
// new arbiter must take it as swapped out — not as a resident vGPU with a reservation, which it
// would then "swap in" at once without an order while the program still waits for its memory —
// and order the swap-in it needs, onto the GPU where its process already is.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::milliseconds;


TEST(ShimReRegister, SwappedOutProgramIsSwappedInByTheNewArbiter) {
  TempDir dir;
  const Simcuda simcuda("reregister", "1x512MiB");
  ArbiterProcess arb{dir, {"--policy", "fifo", "--slice", "5ms"}};
  arb.env = simcuda.env();
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  const std::string a_log = dir / "a.log";
  std::vector<std::string> a_env = ShimEnv(simcuda, arb.socket(), "300MiB", "a", a_log);
  a_env.push_back("GSHARE_ARBITER_FAIL=closed");
  test::SwapProbe a(PROBE_BIN, 3, 8, 64, EnvMap(a_env), LineWait());
  ASSERT_TRUE(a.ready()) << ReadFile(a_log);
  EXPECT_TRUE(a.Verify().intact()) << ReadFile(a_log);
  {
    // b (300 MiB beside a's 300 MiB on 512 MiB) needs the GPU: the idle a is swapped out.
    const std::string b_log = dir / "b.log";
    test::SwapProbe b(PROBE_BIN, 4, 8, 64, EnvMap(ShimEnv(simcuda, arb.socket(), "300MiB", "b", b_log)),
                      LineWait());
    ASSERT_TRUE(b.ready()) << ReadFile(b_log);
    EXPECT_TRUE(b.Verify().intact()) << ReadFile(b_log);
    ASSERT_TRUE(LogHas(a_log, "swapped out")) << ReadFile(a_log) << ReadFile(arb.log());
    EXPECT_EQ(b.Quit(ExitWait()), 0);
  }
  arb.Kill();
  ASSERT_TRUE(LogHas(a_log, "fail-closed (submissions wait)")) << ReadFile(a_log);
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  ASSERT_TRUE(LogHas(a_log, "(re-registration)")) << ReadFile(a_log);
  // Alone on the GPU now: a fits, but it holds nothing there until it is swapped in.
  const test::Verified v = a.Verify();
  EXPECT_TRUE(v.intact()) << v.line << "\n" << ReadFile(a_log) << ReadFile(arb.log());
  EXPECT_EQ(a.Quit(ExitWait()), 0);
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["re_registrations"], 1) << summary.dump();
  EXPECT_GE(summary["swap_ins"].get<int>(), 1) << "no swap-in was ordered\n" << summary.dump();
  EXPECT_EQ(summary["gpus"][0]["overshoot_events"], 0) << summary.dump();
  EXPECT_EQ(summary["gpus"][0]["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
}

}  // namespace
}  // namespace gshare::arbiter::testing
