// dual-queue's and aggressive's decisions: lazy placement at the last safe moment, eager
// placement on an active GPU, parking and deep eviction of idle functions, GPU release, pinning
// of functions that cannot afford a swap.
#include <gtest/gtest.h>

#include "driver.h"
#include "gshare/policy/predictor.h"

namespace gshare::policy::testing {
namespace {

// f0: 10 MB (a host swap takes 10 ms + 1 ms restore on SmallGpu), 5 ms bursts, 100 ms SLO.
constexpr Duration kSwap = 11'000;
constexpr Duration kExec = 5'000;
constexpr Duration kSlo = 100'000;
constexpr Duration kMargin = 1'000;

TEST(DualQueue, WaitsInTheShareQueueUntilTheLastSafeMoment) {
  Driver d("dual-queue", 1);
  d.Send(0, FunctionRegistered{0, Fn(10, kExec, kSlo)});
  auto a = d.Send(0, BurstStart{0});
  EXPECT_TRUE(a.empty()) << Describe(a);
  const Time latest = kSlo - kExec * 14 / 10 - kSwap - kMargin;  // 40% padding
  EXPECT_EQ(d.policy->NextWakeup(), latest);
  EXPECT_TRUE(d.Send(latest - 1, Timer{}).empty());
  a = d.Send(latest, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kActivateGpu, kNoFunction, 0)) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
}

TEST(Aggressive, PlacesAtOnceOnAnActiveGpu) {
  Driver d("aggressive-no-cold", 2);  // f0 has no history: lazy only without the cold rule
  d.Send(0, FunctionRegistered{0, Fn(10, kExec, kSlo)});
  d.Send(0, FunctionRegistered{1, Fn(10, kExec, kSlo)});
  d.Send(0, BurstStart{0});
  const Time latest = kSlo - kExec - kSwap - kMargin;  // learned prediction: no fixed pad
  EXPECT_EQ(d.policy->NextWakeup(), latest);
  auto a = d.Send(latest, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kActivateGpu, kNoFunction, 0)) << Describe(a);
  a = d.Send(latest + 1, BurstStart{1});
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 1, 0)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kActivateGpu)) << Describe(a);
}

TEST(Aggressive, ParksThenDeepEvictsAnIdleFunctionAndReleasesItsGpu) {
  Driver d("aggressive-no-cold", 1);
  d.Send(0, FunctionRegistered{0, Fn(10, kExec, kSlo, /*ctx_mb=*/5)});
  d.Send(0, BurstStart{0});
  auto a = d.Send(d.policy->NextWakeup(), Timer{});
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  a = d.Send(100'000, SwapDone{0, 0, SwapKind::kIn, 0, 16'000});
  ASSERT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
  const Time end = 105'000;
  d.Send(end, BurstEnd{0, 0, kExec});
  // Never seen an inter-arrival gap: park after 10 s idle, deep-evict 10 s later.
  EXPECT_TRUE(d.Send(end + 10 * kUsPerSecond - 1, Timer{}).empty());
  a = d.Send(end + 10 * kUsPerSecond, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kSwapOut, 0)) << Describe(a);
  a = d.Send(end + 10 * kUsPerSecond, SwapDone{0, 0, SwapKind::kOut, 0, 0});
  EXPECT_TRUE(a.empty()) << Describe(a);
  a = d.Send(end + 20 * kUsPerSecond, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  a = d.Send(end + 20 * kUsPerSecond + 5'000, SwapDone{0, 0, SwapKind::kDeepEvict, 5'000'000, 5'000});
  EXPECT_TRUE(Has(a, ActionKind::kReleaseGpu, kNoFunction, 0)) << "release empty GPUs at once: "
                                                                << Describe(a);
}

TEST(DualQueue, KeepsAnEmptyGpuForAMinute) {
  Driver d("dual-queue", 1);
  d.Send(0, FunctionRegistered{0, Fn(10, kExec, kSlo)});
  d.Send(0, BurstStart{0});
  d.Send(d.policy->NextWakeup(), Timer{});
  d.Send(100'000, SwapDone{0, 0, SwapKind::kIn, 0, 11'000});
  d.Send(105'000, BurstEnd{0, 0, kExec});
  auto a = d.Send(105'000 + 60 * kUsPerSecond, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kDeepEvict, 0)) << Describe(a);
  a = d.Send(106'000 + 60 * kUsPerSecond, SwapDone{0, 0, SwapKind::kDeepEvict, 0, 0});
  EXPECT_FALSE(Has(a, ActionKind::kReleaseGpu)) << Describe(a);
  a = d.Send(107'000 + 120 * kUsPerSecond, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kReleaseGpu, kNoFunction, 0)) << Describe(a);
}

// Without execution history the latest safe start rests on the catalog prior alone: the cold
// rule places such a function at once (on a new GPU if need be) rather than gambling its slack
// on it; once it has a history, it waits in the share queue again.
TEST(Aggressive, PlacesAFunctionWithoutHistoryAtOnce) {
  Driver d("aggressive", 2);
  d.Send(0, FunctionRegistered{0, Fn(10, kExec, kSlo)});
  auto a = d.Send(0, BurstStart{0});
  EXPECT_TRUE(Has(a, ActionKind::kActivateGpu, kNoFunction, 0)) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  d.Send(kSwap, SwapDone{0, 0, SwapKind::kIn, 10'000'000, kSwap});
  Time t = kSwap;
  for (int i = 0; i < ExecPredictor::kMinSamples; ++i) {  // a history of bursts
    d.Send(t + kExec, BurstEnd{0, 0, kExec});
    t += kExec + 1'000;
    if (i + 1 < ExecPredictor::kMinSamples) d.Send(t, BurstStart{0});
  }
  // Parked, then deep-evicted and the GPU released after the idle timers.
  d.Send(t + 100 * kUsPerSecond, Timer{});
  d.Send(t + 100 * kUsPerSecond, SwapDone{0, 0, SwapKind::kDeepEvict, 0, 1'000});
  a = d.Send(t + 101 * kUsPerSecond, BurstStart{0});
  EXPECT_FALSE(Has(a, ActionKind::kSwapIn)) << "known now: waits for its latest safe start; "
                                            << Describe(a);
  EXPECT_NE(d.policy->NextWakeup(), kNever);
}

// f0 (500 ms bursts) and f1 (5 ms bursts, 300 ms SLO) cannot share a GPU for good (f0's burst
// exceeds f1's slack). With a spare GPU, f1 waits in the share queue for its last safe moment
// (a new GPU then); when every GPU is already on, waiting frees nothing: f1 is placed at once.
void RunF0ThenAskForF1(Driver& d, Time* f1_start) {
  d.Send(0, FunctionRegistered{0, Fn(400, 500'000, 4 * kUsPerSecond)});
  d.Send(0, FunctionRegistered{1, Fn(100, kExec, 300'000)});
  d.Send(0, BurstStart{0});
  const Time placed = d.policy->NextWakeup();  // f0's own last safe moment (no history)
  auto a = d.Send(placed, Timer{});
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  const Time swapped = placed + 401'000;
  a = d.Send(swapped, SwapDone{0, 0, SwapKind::kIn, 400'000'000, 401'000});
  ASSERT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
  d.Send(swapped + 500'000, BurstEnd{0, 0, 500'000});
  *f1_start = swapped + 600'000;
}

TEST(Aggressive, OnANodeWithEveryGpuOnPlacesAtOnceInsteadOfWaiting) {
  Driver d("aggressive-no-cold", 1);
  Time t = 0;
  RunF0ThenAskForF1(d, &t);
  auto a = d.Send(t, BurstStart{1});
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 1, 0)) << "nothing to wait for: " << Describe(a);
}

TEST(Aggressive, WithASpareGpuWaitsForTheLastSafeMoment) {
  Driver d("aggressive-no-cold", 2);
  Time t = 0;
  RunF0ThenAskForF1(d, &t);
  auto a = d.Send(t, BurstStart{1});
  EXPECT_FALSE(Has(a, ActionKind::kSwapIn)) << Describe(a);
  const Time latest = t + 300'000 - kExec - 101'000 - kMargin;
  EXPECT_EQ(d.policy->NextWakeup(), latest);
  a = d.Send(latest, Timer{});
  EXPECT_TRUE(Has(a, ActionKind::kActivateGpu, kNoFunction, 1)) << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 1, 1)) << Describe(a);
}

// On 1 GiB GPUs g0 holds an idle 600 MB function (evictable), g1 a 500 MB one; a 500 MB
// newcomer fits g1's free memory but would evict on g0: it goes to g1 (packing the fullest GPU
// with evictions was what made the live demo thrash).
TEST(Aggressive, PrefersFreeMemoryOverEvicting) {
  Driver d("aggressive", 2);
  constexpr Duration kSlow = 2 * kUsPerSecond;  // SLO: room for a 600 ms swap
  d.Send(0, FunctionRegistered{0, Fn(600, kExec, kSlow)});
  d.Send(0, FunctionRegistered{1, Fn(500, kExec, kSlow)});
  d.Send(0, FunctionRegistered{2, Fn(500, kExec, kSlow)});
  auto a = d.Send(0, BurstStart{0});
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  a = d.Send(601'000, SwapDone{0, 0, SwapKind::kIn, 600'000'000, 601'000});
  ASSERT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
  a = d.Send(602'000, BurstStart{1});  // f0 runs: g0 cannot take f1
  ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 1, 1)) << Describe(a);
  d.Send(606'000, BurstEnd{0, 0, kExec});
  a = d.Send(1'103'000, SwapDone{1, 1, SwapKind::kIn, 500'000'000, 501'000});
  d.Send(1'108'000, BurstEnd{1, 1, kExec});
  a = d.Send(1'200'000, BurstStart{2});
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 2, 1)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kDeepEvict)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kSwapOut)) << Describe(a);
}

TEST(Aggressive, PinsAFunctionThatCannotAffordASwap) {
  Driver d("aggressive", 1);
  // 100 MB: a host swap takes 101 ms, more than its 50 ms SLO: the cache queue.
  d.Send(0, FunctionRegistered{0, Fn(100, kExec, 50'000)});
  auto a = d.Send(0, BurstStart{0});
  EXPECT_TRUE(Has(a, ActionKind::kActivateGpu)) << "no slack to wait with: " << Describe(a);
  EXPECT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
  bool pinned = false;
  for (const Action& act : a) pinned |= act.kind == ActionKind::kKeepResident && act.pin;
  EXPECT_TRUE(pinned) << Describe(a);
  d.Send(101'000, SwapDone{0, 0, SwapKind::kIn, 0, 101'000});
  d.Send(106'000, BurstEnd{0, 0, kExec});
  a = d.Send(106'000 + 60 * kUsPerSecond, Timer{});
  EXPECT_FALSE(Has(a, ActionKind::kSwapOut)) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kDeepEvict)) << Describe(a);
}

// f0 (50 ms bursts, 55 ms SLO: cannot afford a swap, so it stays resident) is invoked every
// 10 minutes; f1 (5 ms bursts, 30 ms SLO) arrives. A burst of f0 overruns f1's slack, so the
// typical-burst rule keeps them apart; the collision rule alone sees that f0 runs so rarely
// that it would delay about 4e-5 of f1's requests, and packs f1 next to it.
void ShareWithARareLongFunction(const std::string& policy, bool expect_shared) {
  Driver d(policy, 2);
  d.Send(0, FunctionRegistered{0, Fn(10, 50'000, 55'000)});
  d.Send(0, FunctionRegistered{1, Fn(10, kExec, 30'000)});
  for (Time t : {Time{0}, Time{600} * kUsPerSecond}) {
    auto a = d.Send(t, BurstStart{0});
    if (t == 0) {
      ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
      a = d.Send(t + kSwap, SwapDone{0, 0, SwapKind::kIn, 10'000'000, kSwap});
    }
    ASSERT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
    d.Send(t + 60'000, BurstEnd{0, 0, 50'000});
  }
  const auto a = d.Send(601 * kUsPerSecond, BurstStart{1});
  EXPECT_EQ(Has(a, ActionKind::kSwapIn, 1, 0), expect_shared) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kActivateGpu)) << Describe(a);
}

TEST(Aggressive, CollisionRuleSharesAGpuWithARareLongFunction) {
  ShareWithARareLongFunction("aggressive-no-typical-no-cold", true);
}

TEST(Aggressive, TypicalBurstRuleKeepsThemApart) {
  ShareWithARareLongFunction("aggressive-no-cold", false);
  ShareWithARareLongFunction("aggressive-no-collisions-no-cold", false);
}

// f0 (p50 5 ms, p90 20 ms, 25 ms SLO: stays resident) runs every second; f1 (5 ms bursts,
// 30 ms SLO) arrives. Typical bursts fit each other's slack, so the typical rule alone packs
// them; but f0's tail overruns f1's 25 ms slack by ~2 ms on average once a second, about 0.2%
// of f1's requests, over the collision budget: with it, f1 waits for a GPU of its own.
void FrequentOverruns(const std::string& policy, bool expect_shared) {
  Driver d(policy, 2);
  FunctionSpec f0 = Fn(10, 5'000, 25'000);
  f0.exec_p90 = 20'000;
  d.Send(0, FunctionRegistered{0, f0});
  d.Send(0, FunctionRegistered{1, Fn(10, kExec, 30'000)});
  for (Time t : {Time{0}, kUsPerSecond, 2 * kUsPerSecond}) {
    auto a = d.Send(t, BurstStart{0});
    if (t == 0) {
      ASSERT_TRUE(Has(a, ActionKind::kSwapIn, 0, 0)) << Describe(a);
      a = d.Send(t + kSwap, SwapDone{0, 0, SwapKind::kIn, 10'000'000, kSwap});
    }
    ASSERT_TRUE(Has(a, ActionKind::kGrant, 0, 0)) << Describe(a);
    d.Send(t + 20'000, BurstEnd{0, 0, 5'000});
  }
  const auto a = d.Send(2'500'000, BurstStart{1});
  EXPECT_EQ(Has(a, ActionKind::kSwapIn, 1, 0), expect_shared) << Describe(a);
  EXPECT_FALSE(Has(a, ActionKind::kActivateGpu)) << Describe(a);
}

TEST(Aggressive, CollisionRuleKeepsFrequentOverrunsApart) {
  FrequentOverruns("aggressive-no-cold", false);
  FrequentOverruns("aggressive-no-collisions-no-cold", true);
}

}  // namespace
}  // namespace gshare::policy::testing
