// The arbiter driven in-process (gshare_arbiter_core on a thread) by scripted clients written
// directly on shm/ (no shim): protocol orderings that real processes reach only by chance
// (an arbiter descheduled at the wrong moment, seen under sanitizers) are made to happen every
// time. The scripted client's channel writes that must land *inside* one arbiter loop step run
// on the arbiter's own thread, from a spdlog sink that watches for the debug line the arbiter
// logs at that step (the test fails if the line never comes, instead of passing vacuously).
// The harness is inprocess_arbiter.h.
#include <atomic>
#include <condition_variable>
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

// A client whose grant comes with its swap-in's completion runs it and releases it, burst
// ended, before the arbiter looks at its channel again (an arbiter descheduled right after
// granting: seen under ASan). The release must be taken for what it is, the end of the burst:
// it used to be read against the burst report read before the grant (still "in a burst"),
// taken for a slice expiry, and the policy granted the client again: a grant nobody asked for.
TEST(ArbiterInProcess, ReleaseBeforeTheArbiterLooksAgainEndsTheBurst) {
  constexpr uint64_t kQuota = 600ULL << 20;  // two never fit on the 1 GiB GPU together
  Scripted b;  // the client the hook writes for (declared before the hook that uses it)
  std::atomic<uint32_t> b_id{0};  // set once b is registered (the hook then reads b)
  std::mutex mu;
  std::condition_variable cv;
  bool hooked = false;
  // Runs on the arbiter's thread inside its read of b's channel: after it read the swap-in's
  // acknowledgement (and b's burst report: in a burst) and before it grants. b ends its burst
  // and releases the grant about to be issued (its first: sequence 1), exactly what a client
  // that ran that grant before the arbiter looked again leaves in its channel.
  LogHook hook([&](const std::string& line) {
    const uint32_t id = b_id.load();
    if (id == 0 || line.rfind("client " + std::to_string(id) + ": swap-in acknowledged", 0) != 0)
      return;
    const uint64_t now = shm::MonotonicNowNs();
    (void)b.chan->ReportBurstEnd(now, 1000);
    (void)b.chan->Release(1, /*want_again=*/false);
    std::lock_guard<std::mutex> lock(mu);
    hooked = true;
    cv.notify_all();
  });
  InProcessArbiter arb;
  ASSERT_TRUE(arb.Start());
  Scripted a = RegisterScripted(arb.socket(), "a", kQuota);  // fits: resident
  ASSERT_NE(a.chan, nullptr);
  b = RegisterScripted(arb.socket(), "b", kQuota);  // does not fit: starts swapped out
  ASSERT_NE(b.chan, nullptr);
  const shm::SwapOrder out = ObeyNextOrder(b, 0, 0);
  ASSERT_EQ(out.op, shm::SwapOp::kSwapOut);
  b_id.store(b.reg.reply.client_id);

  // b wants the GPU: a (idle) is swapped out to make room, b swapped in and granted.
  (void)b.chan->ReportBurstStart(shm::MonotonicNowNs());
  (void)b.chan->RequestSwapIn();
  EXPECT_EQ(ObeyNextOrder(a, 0, kQuota).op, shm::SwapOp::kSwapOut);
  EXPECT_EQ(ObeyNextOrder(b, out.seq, kQuota).op, shm::SwapOp::kSwapIn);
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, seconds(30), [&] { return hooked; }))
        << "the arbiter never logged b's swap-in acknowledgement";
  }
  // The hook ran inside the loop step that grants; Stop() is served in a later one, and no
  // grant is issued once stopping: whatever that step did is all there is.
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.grants, 1U) << "b was granted again after it released its only grant";
  EXPECT_EQ(stats.yields, 1U);
  EXPECT_EQ(shm::TokenSeq(b.chan->LoadToken()), 1U);
  EXPECT_EQ(stats.preemptions, 0U);
}

}  // namespace
}  // namespace gshare::arbiter
