// keepalive's decisions: a dedicated GPU per function, expiry exactly at the TTL after the last
// request, waiting for a GPU when none is free.
#include <gtest/gtest.h>

#include "driver.h"

namespace gshare::policy::testing {
namespace {

constexpr Duration kTtl = 15 * 60 * kUsPerSecond;

TEST(KeepAlive, DedicatedGpuUntilTheTtlAfterTheLastRequest) {
  Driver d("keepalive", 2);
  d.Send(0, FunctionRegistered{0, Fn(10, 5000, 100'000)});
  auto a = d.Send(0, BurstStart{0});
  EXPECT_TRUE(Has(a, ActionKind::kActivateGpu, kNoFunction, 0)) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  a = d.Send(11'000, SwapDone{0, 0, SwapKind::kIn, 10'000'000, 11'000});
  EXPECT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
  EXPECT_TRUE(d.Send(16'000, BurstEnd{0, 0, 5000}).empty());
  // A second request 10 minutes in moves the expiry to 25 minutes.
  a = d.Send(10 * 60 * kUsPerSecond, BurstStart{0});
  EXPECT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
  d.Send(10 * 60 * kUsPerSecond + 5000, BurstEnd{0, 0, 5000});
  const Time expiry = 10 * 60 * kUsPerSecond + kTtl;
  EXPECT_TRUE(d.Send(kTtl, Timer{}).empty());
  EXPECT_TRUE(d.Send(expiry - 1, Timer{}).empty());
  EXPECT_LE(d.policy->NextWakeup(), expiry);
  a = d.Send(expiry, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kReleaseGpu));
  a = d.Send(expiry + 10, SwapDone{0, 0, SwapKind::kDeepEvict, 0, 10});
  EXPECT_TRUE(Has(a, ActionKind::kReleaseGpu, kNoFunction, 0)) << Describe(a);
}

TEST(KeepAlive, EachFunctionGetsItsOwnGpuAndOthersWait) {
  Driver d("keepalive", 1);
  d.Send(0, FunctionRegistered{0, Fn(10, 5000, 100'000)});
  d.Send(0, FunctionRegistered{1, Fn(10, 5000, 100'000)});
  d.Send(0, BurstStart{0});
  d.Send(11'000, SwapDone{0, 0, SwapKind::kIn, 0, 11'000});
  d.Send(16'000, BurstEnd{0, 0, 5000});
  auto a = d.Send(20'000, BurstStart{1});
  EXPECT_TRUE(a.empty()) << "f1 must wait for a free GPU: " << Describe(a);
  a = d.Send(kTtl, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  a = d.Send(kTtl + 1, SwapDone{0, 0, SwapKind::kDeepEvict, 0, 1});
  ASSERT_EQ(a.size(), 3u) << Describe(a);
  EXPECT_EQ(a[0].kind, ActionKind::kReleaseGpu);
  EXPECT_EQ(a[1].kind, ActionKind::kActivateGpu);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 1, 0));
}

TEST(KeepAlive, BusyFunctionIsNotEvictedAtExpiry) {
  Driver d("keepalive", 1);
  d.Send(0, FunctionRegistered{0, Fn(10, kTtl, 2 * kTtl)});  // a burst longer than the TTL
  d.Send(0, BurstStart{0});
  d.Send(11'000, SwapDone{0, 0, SwapKind::kIn, 0, 11'000});
  auto a = d.Send(kTtl, Timer{});
  EXPECT_FALSE(Has(a, ActionKind::kDeepEvict)) << Describe(a);
}

}  // namespace
}  // namespace gshare::policy::testing
