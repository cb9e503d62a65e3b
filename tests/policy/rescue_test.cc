// The `rescue` idea of aggressive (issue 21, from the exact optimum's windows: requests queued
// behind a burst that ran far longer than predicted missed, where the optimum ran them
// elsewhere): a tenant still running past its predicted end is expected to run as long again,
// and a function queued behind it that would then miss moves to another active GPU where it
// fits and meets its deadline. Hand-built on a two-GPU node: what it must do, and what not.
#include <gtest/gtest.h>

#include <string>

#include "driver.h"

namespace gshare::policy::testing {
namespace {

struct Outcome {
  Time moved = kNever;  // when f1 was swapped out of GPU 0 to go elsewhere
  GpuId to = kNoGpu;
};

// f1 (100 MB, 10 ms, SLO `slo`) and f0 (100 MB, 10 ms predicted, SLO 10 s) live on GPU 0, f2
// (`f2_mb`) on GPU 1. f0's burst starts at 321 ms and never ends; f1's request arrives 1 ms
// later and queues behind it. Timers are delivered for 2 s.
Outcome Scenario(const std::string& name, Duration slo, uint64_t f2_mb = 100) {
  Driver d(name, 2);
  Outcome out;
  const auto send = [&](Time t, EventBody e) {
    for (const Action& a : d.Send(t, std::move(e))) {
      if (a.kind == ActionKind::kSwapOut && a.function == 1 && out.moved == kNever) out.moved = t;
      if (a.kind == ActionKind::kSwapIn && a.function == 1 && out.moved != kNever) out.to = a.gpu;
    }
  };
  d.Send(1'000, FunctionRegistered{0, Fn(100, 10'000, 10'000'000), 0});
  d.Send(1'000, FunctionRegistered{1, Fn(100, 10'000, slo), 0});
  d.Send(1'000, FunctionRegistered{2, Fn(f2_mb, 10'000, 10'000'000), 1});
  const auto serve = [&](FunctionId f, GpuId g, Time t) {  // a cold request served at once
    const ActionList a = d.Send(t, BurstStart{f});
    EXPECT_TRUE(Has(a, ActionKind::kSwapIn, f, g)) << Describe(a);
    EXPECT_TRUE(Has(d.Send(t + 100'000, SwapDone{f, g, SwapKind::kIn, 100'000'000, 100'000}),
                    ActionKind::kGrant, f, g));
    d.Send(t + 110'000, BurstEnd{f, g, 10'000});
  };
  serve(1, 0, 1'000);
  serve(2, 1, 111'000);
  EXPECT_TRUE(Has(d.Send(221'000, BurstStart{0}), ActionKind::kSwapIn, 0, 0));
  EXPECT_TRUE(Has(d.Send(321'000, SwapDone{0, 0, SwapKind::kIn, 100'000'000, 100'000}),
                  ActionKind::kGrant, 0, 0));
  send(322'000, BurstStart{1});
  for (Time t = d.policy->NextWakeup(); t <= 2'000'000; t = d.policy->NextWakeup()) {
    send(t, Timer{});
    if (out.moved != kNever) break;
  }
  return out;
}

// It must move f1 once f0 has run so long that, running as long again, f1 would miss (at
// (722 + 321 - 10) / 2 ms = 516.5 ms), while a migration still meets its deadline.
TEST(Rescue, MovesWhatWouldMissBehindAnOverrunningBurst) {
  const Outcome o = Scenario("aggressive", 400'000);
  EXPECT_EQ(o.moved, 516'501);
  EXPECT_EQ(o.to, 1u);
}

// It must not move a function that still meets its deadline behind the overrun (10 s SLO) ...
TEST(Rescue, LeavesWhatStillMeetsItsDeadline) {
  EXPECT_EQ(Scenario("aggressive", 10'000'000).moved, kNever);
}

// ... nor move it where it would have to evict (GPU 1 full), nor act with the idea off.
TEST(Rescue, NeverEvictsToRescueAndIsOffWhenAblated) {
  EXPECT_EQ(Scenario("aggressive", 400'000, /*f2_mb=*/950).moved, kNever);
  EXPECT_EQ(Scenario("aggressive-no-rescue", 400'000).moved, kNever);
}

}  // namespace
}  // namespace gshare::policy::testing
