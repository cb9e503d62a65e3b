// The holding bound of the slack scheduler (docs/arbiter.md, "Fairness: how long a tenant
// holds a GPU others wait for"): a tenant that never idles and yields at every slice end must
// not win every re-grant against a tenant with short requests on the same GPU.
#include <gtest/gtest.h>

#include "driver.h"
#include "mini_node.h"

namespace gshare::policy::testing {
namespace {

constexpr Duration kSlice = 20'000;  // the arbiter's default slice

PolicyConfig OneGpu() {
  PolicyConfig config;
  config.gpus.assign(1, SmallGpu());
  config.slice = kSlice;
  return config;
}

// Issue 16 item 11: a batch tenant (one request of endless back-to-back work, long past its
// deadline) next to an equal tenant with 50 ms SLO and 2 ms requests in a closed loop.
// Before the bound, EDF re-granted the batch at every slice end (its slack is the most
// negative) and the short requests waited until the batch ended.
TEST(Fairness, LateBatchTenantDoesNotStarveAShortRequestTenant) {
  for (const char* name : {"aggressive", "fifo"}) {
    SCOPED_TRACE(name);
    Driver d(name, OneGpu());
    MiniNode node(d, 1);
    node.Register(1, 0, Fn(100, 5'000, 50'000));  // batch: the prior says 5 ms requests
    node.Register(1, 1, Fn(100, 2'000, 50'000));
    node.RequestAt(0, 1'000, 3600 * kUsPerSecond);  // never ends within the test
    node.ClosedLoop(1, 500'000, 2'000, 1'000);
    node.RunUntil(5 * kUsPerSecond);
    const auto& batch = node.stats(0);
    const auto& shorts = node.stats(1);
    // Alternating with the batch's 20 ms slices: about 4.5 s / 23 ms.
    EXPECT_GE(shorts.completed, 100) << "batch grants " << batch.grants;
    // A short request waits at most for the batch's current slice (plus the step).
    EXPECT_LE(shorts.max_latency, kSlice + 2'000 + 1'000);
    // And the batch is not starved either: it gets the GPU back after every short request.
    EXPECT_GE(batch.grants, shorts.completed - 1);
  }
}

// The hard bound, whatever the SLOs: a holder whose burst is still on time (10 s SLO, a
// predicted 9 s of work) outranks a lax waiter (20 s SLO) under plain EDF until its own
// deadline is near; the waiter is granted once it has queued HoldBound() = 4 slices.
TEST(Fairness, OnTimeHolderYieldsToAWaiterAfterTheHoldBound) {
  Driver d("aggressive", OneGpu());
  MiniNode node(d, 1);
  node.Register(1, 0, Fn(100, 9 * kUsPerSecond, 10 * kUsPerSecond));
  node.Register(1, 1, Fn(100, 2'000, 20 * kUsPerSecond));
  node.RequestAt(0, 1'000, 3600 * kUsPerSecond);
  node.ClosedLoop(1, 200'000, 2'000, 1'000);
  node.RunUntil(900'000);  // the holder's deadline is still 9 s away, its slack > 0
  const auto& waiter = node.stats(1);
  EXPECT_GE(waiter.completed, 5);  // one per ~HoldBound over 0.7 s
  // Queued at most 4 slices (HoldBound) plus the slice in progress then, plus its own work.
  EXPECT_LE(waiter.max_latency, 5 * kSlice + 2'000 + 1'000);
  EXPECT_GE(node.stats(0).grants, waiter.completed - 1);
}

// Two never-idle tenants, both late: they take turns instead of the older one keeping the GPU.
TEST(Fairness, TwoLateBatchTenantsTakeTurns) {
  Driver d("aggressive", OneGpu());
  MiniNode node(d, 1);
  node.Register(1, 0, Fn(100, 5'000, 50'000));
  node.Register(1, 1, Fn(100, 5'000, 50'000));
  node.RequestAt(0, 1'000, 3600 * kUsPerSecond);
  node.RequestAt(1, 300'000, 3600 * kUsPerSecond);
  node.RunUntil(3 * kUsPerSecond);
  // 2.7 s of 20 ms slices shared by two: about 67 grants each.
  EXPECT_GE(node.stats(1).grants, 50);
  EXPECT_GE(node.stats(0).grants, 50);
}

}  // namespace
}  // namespace gshare::policy::testing
