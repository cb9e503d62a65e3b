// GpuUnavailable / GpuAvailable under every policy, step by step on a hand-built two-GPU node:
// the function on a GPU that becomes unavailable is deep-evicted and then served on the other
// GPU; a swap-in that lands on an unavailable GPU is moved off again without a grant; with
// every GPU unavailable the function is held, and placed when a GPU becomes available again.
#include <gtest/gtest.h>

#include <string>

#include "driver.h"

namespace gshare::policy::testing {
namespace {

// Sends `body` at `now`, then Timer events at the policy's wakeups (up to 50 ms later) until
// an action of `want` appears; returns every action seen.
ActionList SendUntil(Driver& d, Time now, EventBody body, ActionKind want) {
  ActionList all = d.Send(now, std::move(body));
  for (int i = 0; i < 20 && !Has(all, want); ++i) {
    const Time wake = d.policy->NextWakeup();
    if (wake == kNever || wake > now + 50'000) break;
    const ActionList more = d.Send(std::max(now, wake), Timer{});
    all.insert(all.end(), more.begin(), more.end());
  }
  return all;
}

GpuId TargetOf(const ActionList& actions, ActionKind kind, FunctionId f) {
  for (const Action& a : actions) {
    if (a.kind == kind && a.function == f) return a.gpu;
  }
  return kNoGpu;
}

// Registers function 0 (1 MB of weights: 2 ms to restore; 1 ms bursts; 3.5 ms SLO: placed at
// once by every policy), sends it a burst, completes the swap-in and checks the grant. Returns
// the GPU it runs on.
GpuId PlaceAndGrant(Driver& d) {
  d.Send(0, FunctionRegistered{0, Fn(1, 1000, 3500)});
  ActionList a = SendUntil(d, 10, BurstStart{0}, ActionKind::kSwapIn);
  const GpuId g = TargetOf(a, ActionKind::kSwapIn, 0);
  EXPECT_NE(g, kNoGpu) << Describe(a);
  if (g == kNoGpu) return g;
  a = d.Send(2'100, SwapDone{0, g, SwapKind::kIn, 1'000'000, 2'000});
  EXPECT_TRUE(Has(a, ActionKind::kGrant, 0, g)) << Describe(a);
  return g;
}

class GpuUnavailableTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuUnavailableTest, FunctionsMoveOffAndComeBack) {
  Driver d(GetParam(), 2);
  const GpuId first = PlaceAndGrant(d);
  ASSERT_NE(first, kNoGpu);
  d.Send(3'100, BurstEnd{0, first, 1'000});

  // The GPU becomes unavailable: the idle function is moved off it.
  ActionList a = d.Send(5'000, GpuUnavailable{first});
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kSwapIn)) << Describe(a);
  a = d.Send(5'100, BurstStart{0});  // arrives while the eviction is in flight
  EXPECT_FALSE(Has(a, ActionKind::kSwapIn, 0, first)) << Describe(a);
  a = SendUntil(d, 5'500, SwapDone{0, first, SwapKind::kDeepEvict, 0, 400}, ActionKind::kSwapIn);
  EXPECT_TRUE(Has(a, ActionKind::kReleaseGpu, kNoFunction, first)) << Describe(a);
  const GpuId second = TargetOf(a, ActionKind::kSwapIn, 0);
  ASSERT_NE(second, kNoGpu) << Describe(a);
  EXPECT_NE(second, first);
  for (const Action& x : a) {  // nothing placed there
    if (x.kind != ActionKind::kReleaseGpu) {
      EXPECT_NE(x.gpu, first) << Describe(a);
    }
  }

  // The second GPU goes away while the swap-in onto it is in flight: no grant there; the
  // function is moved off when it lands, and held (nothing is available).
  a = d.Send(5'600, GpuUnavailable{second});
  EXPECT_FALSE(Has(a, ActionKind::kGrant)) << Describe(a);
  a = d.Send(7'600, SwapDone{0, second, SwapKind::kIn, 1'000'000, 2'000});
  EXPECT_FALSE(Has(a, ActionKind::kGrant)) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  a = SendUntil(d, 8'000, SwapDone{0, second, SwapKind::kDeepEvict, 0, 400}, ActionKind::kSwapIn);
  EXPECT_FALSE(Has(a, ActionKind::kSwapIn)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kActivateGpu)) << Describe(a);
  a = d.Send(20'000, Timer{});
  EXPECT_FALSE(Has(a, ActionKind::kSwapIn)) << Describe(a);

  // The first GPU is back: the held function is placed there.
  a = SendUntil(d, 30'000, GpuAvailable{first}, ActionKind::kSwapIn);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 0, first)) << Describe(a);
  // A repeated event changes nothing.
  a = d.Send(30'100, GpuAvailable{first});
  EXPECT_TRUE(a.empty()) << Describe(a);
}

TEST_P(GpuUnavailableTest, TheRunningTenantIsAskedToYieldAndMovedAfterItsSlice) {
  Driver d(GetParam(), 2);
  const GpuId first = PlaceAndGrant(d);
  ASSERT_NE(first, kNoGpu);
  ActionList a = d.Send(2'500, GpuUnavailable{first});
  EXPECT_TRUE(Has(a, ActionKind::kPreempt, 0, first)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);  // it is running
  a = d.Send(2'700, SliceExpired{0, first});  // it yielded with work left
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kGrant)) << Describe(a);
  a = SendUntil(d, 3'100, SwapDone{0, first, SwapKind::kDeepEvict, 0, 400}, ActionKind::kSwapIn);
  const GpuId second = TargetOf(a, ActionKind::kSwapIn, 0);
  EXPECT_NE(second, kNoGpu) << Describe(a);
  EXPECT_NE(second, first);
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, GpuUnavailableTest,
                         ::testing::Values("keepalive", "proxy-swap", "fifo", "dual-queue",
                                           "aggressive"),
                         PolicyParamName);

}  // namespace
}  // namespace gshare::policy::testing
