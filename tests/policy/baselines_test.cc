// proxy-swap's and fifo's decisions: fixed pool, load at dispatch, LRU eviction order, packing.
#include <gtest/gtest.h>

#include "driver.h"

namespace gshare::policy::testing {
namespace {

// Runs one request of f on g0 to completion under a load-at-dispatch policy.
void Serve(Driver& d, Time t, FunctionId f, bool expect_swap) {
  auto a = d.Send(t, BurstStart{f});
  if (expect_swap) {
    ASSERT_TRUE(Has(a, ActionKind::kSwapIn, f, 0)) << Describe(a);
    a = d.Send(t + 20'000, SwapDone{f, 0, SwapKind::kIn, 0, 20'000});
  }
  ASSERT_TRUE(Has(a, ActionKind::kGrant, f, 0)) << Describe(a);
  d.Send(t + 30'000, BurstEnd{f, 0, 1000});
}

TEST(ProxySwap, ActivatesTheWholePoolAtStart) {
  PolicyConfig config;
  config.gpus.assign(3, SmallGpu());
  auto made = Make("proxy-swap", config);
  ASSERT_TRUE(made.ok());
  ActionList out;
  (*made)->Handle(Event{0, Started{}}, out);
  EXPECT_EQ(out.size(), 3u);
  for (const Action& a : out) EXPECT_EQ(a.kind, ActionKind::kActivateGpu);
}

TEST(ProxySwap, EvictsTheLeastRecentlyUsedModel) {
  Driver d("proxy-swap", 1, SmallGpu(25'000'000));  // room for two 10 MB models
  for (FunctionId f = 0; f < 3; ++f) d.Send(0, FunctionRegistered{f, Fn(10, 1000, 100'000)});
  Serve(d, 0, 0, true);
  Serve(d, 100'000, 1, true);
  Serve(d, 200'000, 0, false);  // cached: no swap; now f1 is the least recently used
  auto a = d.Send(300'000, BurstStart{2});
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 1)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 2, 0)) << Describe(a);
}

TEST(ProxySwap, QueuesFifoBehindTheRunningRequest) {
  Driver d("proxy-swap", 1);
  for (FunctionId f = 0; f < 3; ++f) d.Send(0, FunctionRegistered{f, Fn(10, 1000, 100'000)});
  d.Send(0, BurstStart{0});
  d.Send(20'000, SwapDone{0, 0, SwapKind::kIn, 0, 20'000});  // f0 runs
  EXPECT_TRUE(d.Send(21'000, BurstStart{1}).empty());
  EXPECT_TRUE(d.Send(22'000, BurstStart{2}).empty());
  auto a = d.Send(23'000, BurstEnd{0, 0, 3000});
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 1, 0)) << "first come, first served: " << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kSwapIn, 2)) << Describe(a);
}

TEST(Fifo, PacksFunctionsOntoOneGpu) {
  Driver d("fifo", 4);
  d.Send(0, FunctionRegistered{0, Fn(10, 1000, 100'000)});
  d.Send(0, FunctionRegistered{1, Fn(10, 1000, 100'000)});
  auto a = d.Send(0, BurstStart{0});
  EXPECT_TRUE(Has(a, ActionKind::kActivateGpu, kNoFunction, 0)) << Describe(a);
  a = d.Send(1, BurstStart{1});
  EXPECT_FALSE(Has(a, ActionKind::kActivateGpu)) << "no SLO awareness: it packs: " << Describe(a);
}

}  // namespace
}  // namespace gshare::policy::testing
