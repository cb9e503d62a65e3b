// The swap-order deadline with the arbiter in-process and scripted clients (docs/arbiter.md,
// "Swap orders that are not acknowledged"): a client whose swap-out keeps reporting progress
// (ClientChannel::ReportSwapProgress) outlives the first window and acknowledges; one whose
// progress stops, or that never reports any, is disconnected as no longer reading its channel;
// one that fakes progress forever is disconnected at the cap (quota at 8 MiB/s after the
// window). Windows scale with GSHARE_TEST_TIME_SCALE (slow sanitizer builds).
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "gshare/shm/futex.h"
#include "inprocess_arbiter.h"
#include "test_util.h"

namespace gshare::arbiter {
namespace {

using inproc::InProcessArbiter;
using inproc::ObeyNextOrder;
using inproc::RegisterScripted;
using inproc::Scripted;
using std::chrono::milliseconds;

constexpr uint64_t kSmall = 64ULL << 20;  // first window + 0.5 s; cap: window + 8 s
constexpr uint64_t kBig = 1000ULL << 20;  // does not fit beside kSmall on the 1 GiB GPU

// How a scripted `a` behaves after its swap-out order arrives.
enum class Progress { kUntilAck, kThenStall, kForever };

struct Outcome {
  bool disconnected = false;  // the arbiter closed a's connection
  nlohmann::json status_counters;  // the control socket's `status` counters, just before Finish
  ArbiterStats stats;
};

// `a` (kSmall) registers resident; `b` (kBig) registers, is swapped out, then wants the GPU:
// the arbiter orders `a` out. `a` reports progress every window / 6 for `progress_for` (or
// forever), then acknowledges (kUntilAck) or falls silent.
Outcome RunSwapOut(Progress mode, std::chrono::nanoseconds window,
                   std::chrono::nanoseconds progress_for) {
  InProcessArbiter arb;
  arb.config().policy = "fifo";
  arb.config().swap_order_timeout = window;
  arb.EnableControl();
  Outcome result;
  if (!arb.Start()) {
    ADD_FAILURE() << "the arbiter did not start";
    return result;
  }
  Scripted a = RegisterScripted(arb.socket(), "a", kSmall);
  Scripted b = RegisterScripted(arb.socket(), "b", kBig);
  if (a.chan == nullptr || b.chan == nullptr) return result;
  const shm::SwapOrder b_out = ObeyNextOrder(b, 0, 0);
  EXPECT_EQ(b_out.op, shm::SwapOp::kSwapOut);
  (void)b.chan->ReportBurstStart(shm::MonotonicNowNs());
  (void)b.chan->RequestSwapIn();
  (void)b.chan->NotifyArbiter();

  auto order = a.chan->WaitForSwapOrder(0, std::chrono::seconds(30) * testing::TimeScale());
  EXPECT_TRUE(order.ok() && order->op == shm::SwapOp::kSwapOut) << "a was not ordered out";
  if (!order.ok()) return result;
  const auto tick = window / 6;
  const auto start = std::chrono::steady_clock::now();
  pollfd hup{a.reg.connection.get(), POLLRDHUP, 0};
  uint64_t moved = 0;
  while (mode == Progress::kForever || std::chrono::steady_clock::now() - start < progress_for) {
    a.chan->ReportSwapProgress(order->seq, moved += 1 << 20);
    if (::poll(&hup, 1, 0) == 1) break;  // disconnected while "progressing"
    std::this_thread::sleep_for(tick);
  }
  if (mode == Progress::kUntilAck) {
    (void)a.chan->AckSwap(order->seq, shm::SwapAckStatus::kOk, kSmall, 1000,
                          shm::Residency::kSwappedOut, shm::kNoGpu, 0);
    (void)a.chan->NotifyArbiter();
    // b gets its swap-in once a's memory is free: the order was honoured, not dropped.
    EXPECT_EQ(ObeyNextOrder(b, b_out.seq, kBig).op, shm::SwapOp::kSwapIn);
  }
  // Silent (or done): wait for the arbiter's verdict on a, bounded by the cap and then some.
  const int wait_ms = mode == Progress::kUntilAck
                          ? static_cast<int>(3 * window / milliseconds(1))
                          : static_cast<int>((window + std::chrono::seconds(20)) / milliseconds(1));
  result.disconnected =
      ::poll(&hup, 1, wait_ms * testing::TimeScale()) == 1 && (hup.revents & (POLLRDHUP | POLLHUP));
  result.status_counters = arb.Status()["counters"];
  result.stats = arb.Finish();
  return result;
}

std::chrono::nanoseconds Window() { return milliseconds(300) * testing::TimeScale(); }

// Progress for three windows plus the quota's first allowance: past the plain deadline (window
// + 64 MiB at 128 MiB/s), well inside the cap (window + 64 MiB at 8 MiB/s).
TEST(ArbiterOrderDeadline, ASwapThatKeepsProgressingOutlivesTheFirstWindow) {
  const auto window = Window();
  const Outcome r = RunSwapOut(Progress::kUntilAck, window, 3 * window + milliseconds(500));
  EXPECT_FALSE(r.disconnected) << "a progressing swap was taken for a deaf client";
  EXPECT_EQ(r.stats.order_timeouts, 0U);
  EXPECT_EQ(r.stats.swap_outs, 2U);  // b's first, then a's
}

// Progress for a while, then nothing: the stall is caught one or two windows later.
TEST(ArbiterOrderDeadline, ASwapWhoseProgressStopsIsTimedOut) {
  const auto window = Window();
  const Outcome r = RunSwapOut(Progress::kThenStall, window, 2 * window + milliseconds(500));
  EXPECT_TRUE(r.disconnected);
  EXPECT_EQ(r.stats.order_timeouts, 1U);
  // Operators see it in `status` too (gshare-ctl status, gshare-top).
  EXPECT_EQ(r.status_counters["order_timeouts"], 1) << r.status_counters.dump();
  EXPECT_EQ(r.status_counters["unenforceable"], 0) << r.status_counters.dump();
}

// No progress report at all: the plain deadline, as before progress reports existed.
TEST(ArbiterOrderDeadline, ASwapWithoutProgressReportsIsTimedOutAtThePlainDeadline) {
  const Outcome r = RunSwapOut(Progress::kThenStall, Window(), std::chrono::nanoseconds(0));
  EXPECT_TRUE(r.disconnected);
  EXPECT_EQ(r.stats.order_timeouts, 1U);
}

// "Progress" that never ends in an acknowledgement: disconnected at the cap.
TEST(ArbiterOrderDeadline, FakedProgressIsCutOffAtTheCap) {
  const Outcome r = RunSwapOut(Progress::kForever, Window(), std::chrono::nanoseconds(0));
  EXPECT_TRUE(r.disconnected);
  EXPECT_EQ(r.stats.order_timeouts, 1U);
}

}  // namespace
}  // namespace gshare::arbiter
