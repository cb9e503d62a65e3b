// aggressive's placement on a small node (the live demo's failure modes, issue 6): eviction
// takes the cheapest idle victims rather than the least recently used one, swap times come
// from the link bandwidth the swap-ins measured rather than the configured one, and a resident
// function is moved off a busy GPU only into free memory; with PolicyConfig::swap_out_copies,
// a victim's copy-out is charged to the newcomer's start and to the victim's cost.
#include <gtest/gtest.h>

#include "driver.h"

namespace gshare::policy::testing {
namespace {

constexpr Duration kExec = 5'000;
constexpr Duration kSlow = 2 * kUsPerSecond;  // an SLO with room for any swap here

// Loads f on g0 (1 GB/s, 1 ms restore) at `now` and runs one burst; returns when it ended.
Time LoadAndRun(Driver& d, Time now, FunctionId f, uint64_t mb) {
  auto a = d.Send(now, BurstStart{f});
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, f, 0)) << Describe(a);
  const Duration took = static_cast<Duration>(mb) * 1000 + 1000;
  a = d.Send(now + took, SwapDone{f, 0, SwapKind::kIn, mb * 1'000'000, took});
  EXPECT_TRUE(Has(a, ActionKind::kGrant, f, 0)) << Describe(a);
  d.Send(now + took + kExec, BurstEnd{f, 0, kExec});
  return now + took + kExec;
}

// One 1 GiB GPU: f0 (700 MB) ran at 0 s, f1 (200 MB) at 1 s; f2 (200 MB) needs 26 MB more than
// is free at 2 s. Least recently used would evict the 700 MB f0; evicting f1 frees enough and
// is cheaper (200 MB idle 1 s against 700 MB idle 2 s: fewer bytes likely to come back).
ActionList RunTwoThenAskForAThird(Driver& d) {
  d.Send(0, FunctionRegistered{0, Fn(700, kExec, kSlow)});
  d.Send(0, FunctionRegistered{1, Fn(200, kExec, kSlow)});
  d.Send(0, FunctionRegistered{2, Fn(200, kExec, kSlow)});
  LoadAndRun(d, 0, 0, 700);
  LoadAndRun(d, kUsPerSecond, 1, 200);
  return d.Send(2 * kUsPerSecond, BurstStart{2});
}

TEST(Placement, EvictsTheCheapestIdleVictimNotTheLeastRecentlyUsed) {
  Driver d("aggressive-no-deep-evict", 1);
  const auto a = RunTwoThenAskForAThird(d);
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 1)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 2, 0)) << Describe(a);
}

// The baselines keep least recently used eviction (fifo here).
TEST(Placement, BaselinesStillEvictLeastRecentlyUsed) {
  Driver d("fifo", 1);
  const auto a = RunTwoThenAskForAThird(d);
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
}

// The GPU is configured at 1 GB/s but its swap-ins move 0.1 GB/s (the live arbiter tells the
// policy a default bandwidth; simcuda copies far slower). f1 (50 MB, 300 ms SLO) would take
// 51 ms to restore at the configured rate, 501 ms at the measured one: it cannot afford a swap,
// so it is pinned resident (the cache queue) once loaded.
TEST(Placement, JudgesSwapsAtTheMeasuredBandwidth) {
  Driver d("aggressive", 1);
  d.Send(0, FunctionRegistered{0, Fn(100, kExec, 10 * kUsPerSecond)});
  d.Send(0, FunctionRegistered{1, Fn(50, kExec, 300'000)});
  auto a = d.Send(0, BurstStart{0});
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  a = d.Send(1'001'000, SwapDone{0, 0, SwapKind::kIn, 100'000'000, 1'001'000});
  ASSERT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
  d.Send(1'006'000, BurstEnd{0, 0, kExec});
  a = d.Send(1'100'000, BurstStart{1});
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 1, 0)) << Describe(a);
  bool pinned = false;
  for (const Action& act : a) pinned |= act.kind == ActionKind::kKeepResident && act.function == 1 && act.pin;
  EXPECT_TRUE(pinned) << "a 501 ms restore does not fit a 300 ms SLO: " << Describe(a);
}

// One 1 GiB GPU: f0 (700 MB) runs a long burst when f1 (500 MB) arrives; nothing can make room
// while f0 runs (a function with work is never evicted), so f1 backs off. When f0's burst
// ends, f1 is placed at once (evicting the now idle f0), not when its backoff timer fires.
TEST(Placement, AMemoryWaiterIsPlacedWhenTheHolderFinishes) {
  Driver d("aggressive", 1);
  d.Send(0, FunctionRegistered{0, Fn(700, 400'000, 10 * kUsPerSecond)});
  d.Send(0, FunctionRegistered{1, Fn(500, kExec, 10 * kUsPerSecond)});
  auto a = d.Send(0, BurstStart{0});
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  a = d.Send(701'000, SwapDone{0, 0, SwapKind::kIn, 700'000'000, 701'000});
  ASSERT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
  a = d.Send(702'000, BurstStart{1});
  ASSERT_FALSE(Has(a, ActionKind::kSwapIn)) << "no room while f0 runs: " << Describe(a);
  const Time end = 1'101'000;
  while (d.policy->NextWakeup() < end) {  // retries while f0 still runs
    a = d.Send(d.policy->NextWakeup(), Timer{});
    ASSERT_FALSE(Has(a, ActionKind::kSwapIn)) << Describe(a);
  }
  ASSERT_LT(end, d.policy->NextWakeup()) << "the backoff alone would place it later";
  a = d.Send(end, BurstEnd{0, 0, 400'000});
  EXPECT_TRUE(Has(a, ActionKind::kSwapOut, 0) || Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 1, 0)) << Describe(a);
}

// One 1 GiB GPU: f0 (200 MB, 100 ms SLO: a 201 ms restore would miss it) is pinned resident;
// f1 (900 MB, 10 s SLO) does not fit beside it. f1 can afford to wait, so f0 is not evicted on
// its arrival; once f1's slack is gone (its latest safe start), f0 goes and f1 comes in time.
TEST(Placement, APinnedFunctionIsEvictedOnlyWhenTheNewcomerCannotWait) {
  Driver d("aggressive-no-deep-evict", 1);
  d.Send(0, FunctionRegistered{0, Fn(200, kExec, 100'000)});
  d.Send(0, FunctionRegistered{1, Fn(900, kExec, 10 * kUsPerSecond)});
  auto a = d.Send(0, BurstStart{0});
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  a = d.Send(201'000, SwapDone{0, 0, SwapKind::kIn, 200'000'000, 201'000});
  d.Send(206'000, BurstEnd{0, 0, kExec});
  const Time arrival = 300'000;
  a = d.Send(arrival, BurstStart{1});
  EXPECT_FALSE(Has(a, ActionKind::kDeepEvict, 0)) << "f1 can wait: " << Describe(a);
  const Time latest = arrival + 10 * kUsPerSecond - kExec - 901'000;
  Time swapped_at = kNever;
  while (swapped_at == kNever && d.policy->NextWakeup() <= latest) {
    const Time t = d.policy->NextWakeup();
    a = d.Send(t, Timer{});
    if (Has(a, ActionKind::kSwapIn, 1, 0)) {
      EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
      swapped_at = t;
    } else {
      EXPECT_FALSE(Has(a, ActionKind::kDeepEvict, 0)) << "at " << t << ": " << Describe(a);
    }
  }
  EXPECT_EQ(swapped_at, latest) << "placed at its latest safe start, not before, not after";
}

// A function whose state the environment already keeps on g1 (FunctionRegistered::state_on) is
// first placed there, not beside f0 on g0 where packing would put it.
TEST(Placement, StartsAFunctionWhereTheEnvironmentAlreadyKeepsIt) {
  for (const bool hinted : {true, false}) {
    Driver d("aggressive", 2);
    d.Send(0, FunctionRegistered{0, Fn(100, kExec, kSlow)});
    d.Send(0, FunctionRegistered{1, Fn(100, kExec, kSlow), hinted ? GpuId{1} : kNoGpu});
    LoadAndRun(d, 0, 0, 100);
    const auto a = d.Send(kUsPerSecond, BurstStart{1});
    EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 1, hinted ? 1 : 0)) << hinted << ": " << Describe(a);
  }
}

// One 1 GiB GPU: f0 (600 MB, idle longest) and f1-f3 (100 MB each, used recently); f4 (350 MB)
// needs 176 MB more than is free. Ranked by cost per byte, f0 (the least likely to be wanted)
// would go alone, though only 176 of its 600 MB are needed; two small victims cost less in all
// (the live demo: cnns evicting a 1 GiB llm to make 150 MiB of room).
TEST(Placement, TwoSmallVictimsRatherThanOneLargeOnePaidInFull) {
  Driver d("aggressive-no-deep-evict", 1);
  d.Send(0, FunctionRegistered{0, Fn(600, kExec, kSlow)});
  for (FunctionId f = 1; f <= 3; ++f) d.Send(0, FunctionRegistered{f, Fn(100, kExec, kSlow)});
  d.Send(0, FunctionRegistered{4, Fn(350, kExec, kSlow)});
  LoadAndRun(d, 0, 0, 600);
  LoadAndRun(d, 1'000'000, 1, 100);
  LoadAndRun(d, 1'300'000, 2, 100);
  LoadAndRun(d, 1'600'000, 3, 100);
  const auto a = d.Send(2 * kUsPerSecond, BurstStart{4});
  EXPECT_FALSE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  int small = 0;
  for (FunctionId f = 1; f <= 3; ++f) small += Has(a, ActionKind::kDeepEvict, f) ? 1 : 0;
  EXPECT_EQ(small, 2) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 4, 0)) << Describe(a);
}

// Loads f on g at `now` (the swap-in reported at 1 GB/s plus the 1 ms restore) and grants it;
// with `finish`, the burst also ends kExec later.
void LoadOn(Driver& d, Time now, FunctionId f, GpuId g, uint64_t mb, bool finish = true) {
  auto a = d.Send(now, BurstStart{f});
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, f, g)) << Describe(a);
  const Duration took = static_cast<Duration>(mb) * 1000 + 1000;
  a = d.Send(now + took, SwapDone{f, g, SwapKind::kIn, mb * 1'000'000, took});
  ASSERT_TRUE(Has(a, ActionKind::kGrant, f, g)) << Describe(a);
  if (finish) d.Send(now + took + kExec, BurstEnd{f, g, kExec});
}

// Evictions copy out first (the live arbiter: the memory is free once the swap-out is
// acknowledged). Two 1 GiB GPUs, each 27 MB short for f2 (300 MB, 400 ms SLO): on g0 the only
// victim is an 800 MB llm idle for 9 s, on g1 a 100 MB function idle for 0.8 s (the other
// tenant of g1 is running). Counting only the bytes likely to come back, the llm is the
// cheaper victim; but its 800 ms copy-out would make f2 start after its deadline and costs the
// link 8 times as many bytes now: the small victim goes. Without the copies it is the llm.
TEST(Placement, ChargesTheVictimsCopyOut) {
  for (const bool copies : {true, false}) {
    Driver d("aggressive-no-scale-no-deep-evict", 2, SmallGpu(), copies);  // the demo's
    d.Send(0, FunctionRegistered{0, Fn(800, kExec, 10 * kUsPerSecond), GpuId{0}});
    d.Send(0, FunctionRegistered{1, Fn(100, kExec, kSlow), GpuId{1}});
    d.Send(0, FunctionRegistered{2, Fn(300, kExec, 400'000)});
    d.Send(0, FunctionRegistered{3, Fn(700, kExec, kSlow), GpuId{1}});
    LoadOn(d, 0, 0, 0, 800);
    LoadOn(d, 9'000'000, 1, 1, 100);
    LoadOn(d, 9'200'000, 3, 1, 700, /*finish=*/false);  // f3 runs until after f2 arrives
    const auto a = d.Send(9'902'000, BurstStart{2});
    if (copies) {
      EXPECT_FALSE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
      EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 1)) << Describe(a);
      EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 2, 1)) << Describe(a);
    } else {
      EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << "the test's premise: " << Describe(a);
    }
  }
}

}  // namespace
}  // namespace gshare::policy::testing
