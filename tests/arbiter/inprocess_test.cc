// The arbiter driven in-process (gshare_arbiter_core on a thread) by scripted clients written
// directly on shm/ (no shim): protocol orderings that real processes reach only by chance
// (an arbiter descheduled at the wrong moment, seen under sanitizers) are made to happen every
// time. The scripted client's channel writes that must land *inside* one arbiter loop step run
// on the arbiter's own thread, from a spdlog sink that watches for the debug line the arbiter
// logs at that step (the test fails if the line never comes, instead of passing vacuously).
// The harness is inprocess_arbiter.h.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include <gtest/gtest.h>

#include "gshare/shm/futex.h"
#include "inprocess_arbiter.h"

namespace gshare::arbiter {
namespace {

using inproc::InProcessArbiter;
using inproc::LogHook;
using inproc::ObeyNextOrder;
using inproc::RegisterScripted;
using inproc::Scripted;
using std::chrono::seconds;

// Runs `writes` once, on the arbiter's thread, inside the loop step that logs client `id`'s
// swap-in acknowledgement (Watch(id)): after the arbiter read the acknowledgement (and the
// client's burst report) and before it grants.
class OnSwapInAck {
 public:
  explicit OnSwapInAck(std::function<void()> writes) : writes_(std::move(writes)) {}
  void Watch(uint32_t id) { id_.store(id); }
  // Whether the writes ran within `timeout`.
  bool WaitFired(std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return fired_; });
  }

 private:
  std::function<void()> writes_;
  std::atomic<uint32_t> id_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool fired_ = false;
  LogHook hook_{[this](const std::string& line) {
    const uint32_t id = id_.load();
    if (id == 0 || line.rfind("client " + std::to_string(id) + ": swap-in acknowledged", 0) != 0)
      return;
    std::lock_guard<std::mutex> lock(mu_);
    if (fired_) return;
    writes_();
    fired_ = true;
    cv_.notify_all();
  }};
};

constexpr uint64_t kQuota = 600ULL << 20;  // two never fit on the 1 GiB GPU together

// Registers a (fits: resident) and b (does not fit beside a: starts swapped out, that order
// obeyed; *out). Call with ASSERT_NO_FATAL_FAILURE.
void RegisterResidentAndSwappedOut(InProcessArbiter& arb, Scripted& a, Scripted& b,
                                   shm::SwapOrder* out) {
  a = RegisterScripted(arb.socket(), "a", kQuota);
  ASSERT_NE(a.chan, nullptr);
  b = RegisterScripted(arb.socket(), "b", kQuota);
  ASSERT_NE(b.chan, nullptr);
  *out = ObeyNextOrder(b, 0, 0);
  ASSERT_EQ(out->op, shm::SwapOp::kSwapOut);
}

// A client whose grant comes with its swap-in's completion runs it and releases it, burst
// ended, before the arbiter looks at its channel again (an arbiter descheduled right after
// granting: seen under ASan). The release must be taken for what it is, the end of the burst:
// it used to be read against the burst report read before the grant (still "in a burst"),
// taken for a slice expiry, and the policy granted the client again: a grant nobody asked for.
TEST(ArbiterInProcess, ReleaseBeforeTheArbiterLooksAgainEndsTheBurst) {
  Scripted a, b;
  // b ends its burst and releases the grant about to be issued (its first: sequence 1), exactly
  // what a client that ran that grant before the arbiter looked again leaves in its channel.
  OnSwapInAck hook([&] {
    (void)b.chan->ReportBurstEnd(shm::MonotonicNowNs(), 1000);
    (void)b.chan->Release(1, /*want_again=*/false);
  });
  InProcessArbiter arb;
  ASSERT_TRUE(arb.Start());
  shm::SwapOrder out;
  ASSERT_NO_FATAL_FAILURE(RegisterResidentAndSwappedOut(arb, a, b, &out));
  hook.Watch(b.reg.reply.client_id);

  // b wants the GPU: a (idle) is swapped out to make room, b swapped in and granted.
  (void)b.chan->ReportBurstStart(shm::MonotonicNowNs());
  (void)b.chan->RequestSwapIn();
  EXPECT_EQ(ObeyNextOrder(a, 0, kQuota).op, shm::SwapOp::kSwapOut);
  EXPECT_EQ(ObeyNextOrder(b, out.seq, kQuota).op, shm::SwapOp::kSwapIn);
  ASSERT_TRUE(hook.WaitFired(seconds(30))) << "the arbiter never logged b's swap-in acknowledgement";
  // The hook ran inside the loop step that grants; Stop() is served in a later one, and no
  // grant is issued once stopping: whatever that step did is all there is.
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.grants, 1U) << "b was granted again after it released its only grant";
  EXPECT_EQ(stats.yields, 1U);
  EXPECT_EQ(shm::TokenSeq(b.chan->LoadToken()), 1U);
  EXPECT_EQ(stats.preemptions, 0U);
}

// A client that reports its burst's start, asks for its swap-in once the burst is under way,
// runs its grant and releases it, all before the arbiter looks again: the swap-in request was
// made for the burst that just ended, not for another one. It used to count as asking for the
// GPU once that burst ended: a second burst was started for the client, granted, and held
// until its slice ran out (in-process co-run tests under load waited 20 s for a GPU held so).
TEST(ArbiterInProcess, ASwapInRequestMadeForTheBurstThatEndedAsksForNoOther) {
  Scripted a, b;
  // b asks for its swap-in (late, for this burst), ends its burst and releases grant 1.
  OnSwapInAck hook([&] {
    (void)b.chan->RequestSwapIn();
    (void)b.chan->ReportBurstEnd(shm::MonotonicNowNs(), 1000);
    (void)b.chan->Release(1, /*want_again=*/false);
  });
  InProcessArbiter arb;
  ASSERT_TRUE(arb.Start());
  shm::SwapOrder out;
  ASSERT_NO_FATAL_FAILURE(RegisterResidentAndSwappedOut(arb, a, b, &out));
  hook.Watch(b.reg.reply.client_id);

  // b's burst starts (its report alone asks for the GPU): a is swapped out, b swapped in.
  (void)b.chan->ReportBurstStart(shm::MonotonicNowNs());
  EXPECT_EQ(ObeyNextOrder(a, 0, kQuota).op, shm::SwapOp::kSwapOut);
  EXPECT_EQ(ObeyNextOrder(b, out.seq, kQuota).op, shm::SwapOp::kSwapIn);
  ASSERT_TRUE(hook.WaitFired(seconds(30))) << "the arbiter never logged b's swap-in acknowledgement";
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.grants, 1U) << "b was granted a burst it never started";
  EXPECT_EQ(stats.yields, 1U);
  EXPECT_EQ(shm::TokenSeq(b.chan->LoadToken()), 1U);
}

}  // namespace
}  // namespace gshare::arbiter
