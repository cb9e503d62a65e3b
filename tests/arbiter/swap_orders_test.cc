// Unit tests of SwapOrders (arbiter/src/swap_orders.h): the queue's order (the one in flight
// first, swap-outs put before waiting orders), a drained GPU's waiting swap-ins dropped, the
// deadline of the order in flight (following reported progress up to its cap), the back-off of
// failed swap-ins and restores, and invariant 4's check.
#include "swap_orders.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;
constexpr uint64_t kMiB = 1ULL << 20;
const GpuIndex kG0{0};
const GpuIndex kG1{1};

Transfer SwapIn(GpuIndex g, bool for_policy = false) {
  return {shm::SwapOp::kSwapIn, g, for_policy, policy::SwapKind::kIn};
}
Transfer SwapOut(GpuIndex g) { return {shm::SwapOp::kSwapOut, g, false, policy::SwapKind::kOut}; }

TEST(SwapOrders, TheFirstOrderQueuedIsTriedAtOnceTheOthersWait) {
  SwapOrders q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.InFlight(), nullptr);
  EXPECT_FALSE(q.FrontWaiting());
  EXPECT_TRUE(q.Queue(SwapIn(kG0)));
  EXPECT_TRUE(q.FrontWaiting());
  EXPECT_FALSE(q.Queue(SwapOut(kG0)));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_TRUE(q.HasSwapInTo(kG0));
  EXPECT_FALSE(q.HasSwapInTo(kG1));
  q.front().issued = true;
  ASSERT_NE(q.InFlight(), nullptr);
  EXPECT_EQ(q.InFlight()->op, shm::SwapOp::kSwapIn);
  EXPECT_FALSE(q.FrontWaiting());
  const Transfer done = q.Pop();
  EXPECT_EQ(done.op, shm::SwapOp::kSwapIn);
  EXPECT_EQ(q.front().op, shm::SwapOp::kSwapOut);
  EXPECT_TRUE(q.FrontWaiting());
}

TEST(SwapOrders, ASwapOutPutFirstGoesBeforeWaitingOrdersButNeverBeforeOneInFlight) {
  SwapOrders q;
  (void)q.Queue(SwapIn(kG1));
  q.QueueFirst(SwapOut(kG0));  // off GPU 0 before the swap-in onto GPU 1
  EXPECT_EQ(q.front().op, shm::SwapOp::kSwapOut);
  q.front().issued = true;
  q.QueueFirst(SwapOut(kG0));
  EXPECT_TRUE(q.front().issued);  // the order in flight stays first
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.Check(), "");
}

TEST(SwapOrders, ADrainDropsOnlyTheWaitingSwapInsOntoItsGpu) {
  SwapOrders q;
  (void)q.Queue(SwapIn(kG0));
  q.front().issued = true;  // in flight: stays
  (void)q.Queue(SwapIn(kG0, /*for_policy=*/true));
  (void)q.Queue(SwapIn(kG1, /*for_policy=*/true));
  (void)q.Queue(SwapOut(kG0));
  EXPECT_TRUE(q.DropWaitingSwapInsTo(kG0));  // one was the policy's
  ASSERT_EQ(q.size(), 3u);
  EXPECT_TRUE(q.front().issued);
  EXPECT_FALSE(q.DropWaitingSwapInsTo(kG0));  // nothing left to drop
  SwapOrders r;
  (void)r.Queue(SwapIn(kG1));
  EXPECT_FALSE(r.DropWaitingSwapInsTo(kG1));  // dropped, but not the policy's
  EXPECT_TRUE(r.empty());
}

TEST(SwapOrders, TheDeadlineFollowsProgressUpToItsCap) {
  SwapOrders q;
  const uint64_t window = 10 * kS;
  const uint64_t quota = 1024 * kMiB;
  EXPECT_EQ(q.DeadlineNs(quota, window), UINT64_MAX);  // nothing in flight
  (void)q.Queue(SwapOut(kG0));
  EXPECT_EQ(q.DeadlineNs(quota, window), UINT64_MAX);  // waiting, not in flight
  q.front().issued = true;
  q.front().issued_ns = 100 * kS;
  q.front().order_seq = 7;
  // 1 GiB at 128 MiB/s: 8 s beyond the window.
  const uint64_t first = 100 * kS + window + 8 * kS;
  EXPECT_EQ(q.DeadlineNs(quota, window), first);
  // A report of another order, or of no new bytes, is no progress.
  EXPECT_FALSE(q.NoteProgress(6, 10 * kMiB, 105 * kS));
  EXPECT_FALSE(q.NoteProgress(7, 0, 105 * kS));
  EXPECT_EQ(q.DeadlineNs(quota, window), first);
  // Progress seen early changes nothing (the first deadline is later)...
  EXPECT_TRUE(q.NoteProgress(7, 10 * kMiB, 105 * kS));
  EXPECT_EQ(q.DeadlineNs(quota, window), first);
  // ... progress seen later gives a window from then ...
  EXPECT_TRUE(q.NoteProgress(7, 20 * kMiB, 115 * kS));
  EXPECT_EQ(q.DeadlineNs(quota, window), 125 * kS);
  // ... up to the cap: 1 GiB at 8 MiB/s, 128 s beyond the window.
  EXPECT_TRUE(q.NoteProgress(7, 30 * kMiB, 300 * kS));
  EXPECT_EQ(q.DeadlineNs(quota, window), 100 * kS + window + 128 * kS);
}

TEST(SwapOrders, FailuresBackOffDoublingUpToTwoSecondsUntilOneSucceeds) {
  SwapOrders q;
  EXPECT_EQ(q.Failed(), 50 * kMs);
  EXPECT_EQ(q.Failed(), 100 * kMs);
  EXPECT_EQ(q.Failed(), 200 * kMs);
  EXPECT_EQ(q.Failed(), 400 * kMs);
  EXPECT_EQ(q.Failed(), 800 * kMs);
  EXPECT_EQ(q.Failed(), 1600 * kMs);
  EXPECT_EQ(q.Failed(), 2000 * kMs);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(q.Failed(), 2000 * kMs);  // no overflow
  EXPECT_EQ(q.failures(), 47u);
  q.Succeeded();
  EXPECT_EQ(q.failures(), 0u);
  EXPECT_EQ(q.Failed(), 50 * kMs);
}

TEST(SwapOrders, ARetryWaitsForItsBackOffOnlyWhileWaiting) {
  SwapOrders q;
  EXPECT_EQ(q.RetryAtNs(), UINT64_MAX);
  Transfer retry = SwapIn(kG0);
  retry.not_before_ns = 5 * kS;
  (void)q.Queue(retry);
  EXPECT_EQ(q.RetryAtNs(), 5 * kS);
  q.front().issued = true;
  EXPECT_EQ(q.RetryAtNs(), UINT64_MAX);
}

TEST(SwapOrders, TheCheckFindsASecondOrderInFlight) {
  SwapOrders q;
  (void)q.Queue(SwapOut(kG0));
  (void)q.Queue(SwapIn(kG1));
  q.front().issued = true;
  EXPECT_EQ(q.Check(), "");
  Transfer second = SwapIn(kG0);
  second.issued = true;
  (void)q.Queue(second);
  EXPECT_NE(q.Check().find("in flight behind"), std::string::npos) << q.Check();
}

}  // namespace
}  // namespace gshare::arbiter
