// A node whose swaps are slower than the arbiter's first window for a swap order (a loaded
// host, a sanitizer build, a slow link): the shim reports its copies' progress in its channel
// and the arbiter, seeing the order move, does not take the function for a client that stopped
// reading its channel. Before progress reports, such a function was disconnected in the middle
// of its swap, came back resident, and was counted twice on the GPU (docs/reliability.md).
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "fault_env.h"

namespace gshare::fault {
namespace {

using arbiter::testing::ReadFile;
using std::chrono::seconds;

// Two 160 MiB functions on a 256 MiB GPU: every turn of one swaps the other out and in. Their
// ~50 MiB images cross a 10 MB/s simulated link in about 5.2 s, with a progress report every
// 16 MiB (1.7 s), while a swap order's first window is 3 s + 160 MiB at 128 MiB/s = 4.25 s and
// each later one 3 s (x GSHARE_TEST_TIME_SCALE in sanitizer builds, where the swaps are not
// slower in simulated time, so there the fault is not reached: only checked).
TEST(FaultSlowSwap, ASwapSlowerThanTheFirstWindowIsNotTakenForADeadClient) {
  const std::string window = std::to_string(3 * TimeScale()) + "s";
  FaultNode node("1x256MiB", "0.01",
                 {"--policy", "fifo", "--slice", "5ms", "--preempt-grace", "10s",
                  "--swap-order-timeout", window});
  ASSERT_TRUE(node.arbiter().Start());
  // name, quota, seed, big block MiB, budget MiB, turns, operations per turn, idle ms
  const Worker a = node.Spawn({"a", "160MiB", 41, 48, 16, 1, 1, 30, {}, {}});
  const Worker b = node.Spawn({"b", "160MiB", 42, 48, 16, 1, 1, 30, {}, {}});
  for (const Worker* w : {&a, &b}) {
    int code = -1;
    const nlohmann::json r = node.Finish(*w, seconds(300) * TimeScale(), &code);
    EXPECT_EQ(code, 0) << node.Describe(*w);
    EXPECT_TRUE(r.is_object() && r["errors"] == 0) << r.dump() << node.Describe(*w);
  }
  const std::string log = ReadFile(node.arbiter().log());
  const nlohmann::json summary = node.arbiter().Stop();
  ASSERT_TRUE(summary.is_object()) << log;
  EXPECT_GE(summary["swap_outs"].get<int>(), 1) << summary.dump();
  EXPECT_EQ(summary["order_timeouts"], 0) << summary.dump() << log;
  EXPECT_EQ(summary["re_registrations"], 0) << summary.dump();
  EXPECT_EQ(summary["gpus"][0]["overshoot_events"], 0) << summary.dump();
  EXPECT_EQ(summary["gpus"][0]["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
  if (TimeScale() == 1) {
    // The fault was reached: some order outlived its first window on progress reports.
    EXPECT_NE(log.find("still moving"), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace gshare::fault
