// The lease's races made to happen every time (docs/arbiter.md, "The lease"): scripted clients
// on an in-process arbiter (inprocess_arbiter.h), their swap orders obeyed by a thread each, and
// the one write that must land inside an arbiter loop step done from a spdlog hook on the
// arbiter's thread (the test fails if that step never comes).
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gshare/shm/futex.h"
#include "inprocess_arbiter.h"

namespace gshare::arbiter {
namespace {

using inproc::InProcessArbiter;
using inproc::LogHook;
using inproc::RegisterScripted;
using inproc::Scripted;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A scripted client whose swap orders a thread of its own obeys at once, as a shim's service
// thread does. Every write to the channel goes through Do (the reporting methods need one caller
// at a time).
class ObeyingClient {
 public:
  ObeyingClient(const std::string& socket, const std::string& name, uint64_t quota)
      : s_(RegisterScripted(socket, name, quota)), quota_(quota) {
    if (s_.chan != nullptr) thread_ = std::thread([this] { Obey(); });
  }
  ~ObeyingClient() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  ObeyingClient(const ObeyingClient&) = delete;
  ObeyingClient& operator=(const ObeyingClient&) = delete;

  bool ok() const { return s_.chan != nullptr; }
  uint32_t id() const { return s_.reg.reply.client_id; }
  template <typename F>
  auto Do(F f) {
    std::lock_guard<std::mutex> lock(mu_);
    return f(*s_.chan);
  }
  // Thread-safe reads (channel.h).
  shm::ClientChannel& chan() { return *s_.chan; }
  // Swap-outs obeyed so far.
  int swap_outs() const { return swap_outs_.load(); }

 private:
  void Obey() {
    uint32_t last = 0;
    while (!stop_) {
      auto order = s_.chan->WaitForSwapOrder(last, milliseconds(20));
      if (!order.ok()) continue;
      last = order->seq;
      const bool in = order->op == shm::SwapOp::kSwapIn;
      (void)Do([&](shm::ClientChannel& ch) {
        return ch.AckSwap(order->seq, shm::SwapAckStatus::kOk, quota_, 1000,
                          in ? shm::Residency::kResident : shm::Residency::kSwappedOut,
                          in ? order->target_gpu : shm::kNoGpu, in ? quota_ : 0);
      });
      if (!in) ++swap_outs_;
    }
  }

  Scripted s_;
  uint64_t quota_;
  std::mutex mu_;
  std::atomic<bool> stop_{false};
  std::atomic<int> swap_outs_{0};
  std::thread thread_;
};

// Waits (bounded) until `pred` holds.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// x takes the lease it was just offered at the moment y asks for the GPU, which needs x swapped
// out: the policy does not grant x's take, x is asked to yield and ends that burst. Swapped out,
// x begins its next burst and asks to be swapped in (once, as a shim does) while the arbiter
// still counts the taken burst as outstanding (it is answered only when the policy grants it).
// That request used to be taken for the outstanding burst's and dropped: once the policy had
// its answer, x's next burst was never started and x waited for ever (seen as a hung function
// in ArbiterLease.TakeVersusRevokeRacesNeverLeaveTwoHolders on a loaded machine).
TEST(ArbiterLeaseRace, ABurstAskedForWhileATakenBurstIsOutstandingIsServed) {
  constexpr uint64_t kQuota = 600ULL << 20;  // two never fit on the 1 GiB GPU together
  std::atomic<ObeyingClient*> hooked_x{nullptr};
  std::atomic<ObeyingClient*> hooked_y{nullptr};
  std::atomic<bool> raced{false};
  // On the arbiter's thread, right after it offered x its lease: x takes it (no doorbell, as a
  // shim's Acquire does) and y asks for the GPU.
  LogHook hook([&](const std::string& line) {
    ObeyingClient* x = hooked_x.load();
    if (x == nullptr || raced || line.rfind("client " + std::to_string(x->id()) + ": offered a lease", 0) != 0)
      return;
    raced = true;
    const bool took = x->Do([](shm::ClientChannel& ch) {
      (void)ch.ReportBurstStart(shm::MonotonicNowNs(), /*notify=*/false);
      return ch.TryTakeLease().has_value();
    });
    EXPECT_TRUE(took) << "x could not take the lease it was offered";
    ObeyingClient* y = hooked_y.load();
    (void)y->Do([](shm::ClientChannel& ch) { return ch.ReportBurstStart(shm::MonotonicNowNs()); });
    (void)y->chan().RequestSwapIn();
  });
  InProcessArbiter arb;
  arb.config().lease = true;
  ASSERT_TRUE(arb.Start());
  ObeyingClient y(arb.socket(), "y", kQuota);  // first: resident, polled before x
  ASSERT_TRUE(y.ok());
  ObeyingClient x(arb.socket(), "x", kQuota);  // does not fit: starts swapped out
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(Eventually([&] { return x.swap_outs() == 1; })) << "x was never swapped out";

  // x's first burst: y (idle) makes room, x is swapped in and granted.
  (void)x.Do([](shm::ClientChannel& ch) { return ch.ReportBurstStart(shm::MonotonicNowNs()); });
  (void)x.chan().RequestSwapIn();
  auto first = x.chan().WaitForGrant(seconds(20));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // Its release at the end of the burst makes it the sole tenant: the arbiter offers it a
  // lease, and the hook races the take against y's request.
  hooked_y.store(&y);
  hooked_x.store(&x);
  (void)x.Do([&](shm::ClientChannel& ch) {
    (void)ch.ReportBurstEnd(shm::MonotonicNowNs(), 1000);
    return ch.Release(first->seq, /*want_again=*/false);
  });
  ASSERT_TRUE(Eventually([&] { return raced.load(); })) << "the arbiter never offered x a lease";
  // The policy serves y: x is asked to yield its take, and ends that burst.
  ASSERT_TRUE(Eventually([&] { return x.chan().PreemptSeq() == x.chan().ReadGrant().seq; }))
      << "x's take was never preempted";
  const uint32_t taken = x.chan().ReadGrant().seq;
  (void)x.Do([&](shm::ClientChannel& ch) {
    (void)ch.ReportBurstEnd(shm::MonotonicNowNs(), 1000);
    return ch.Release(taken, /*want_again=*/false);
  });
  // Swapped out to make room for y, x begins its next burst and asks to be swapped in, once.
  ASSERT_TRUE(Eventually([&] { return x.swap_outs() == 2; })) << "x was not swapped out for y";
  (void)x.Do([](shm::ClientChannel& ch) { return ch.ReportBurstStart(shm::MonotonicNowNs()); });
  (void)x.chan().RequestSwapIn();
  // y runs its burst and ends it.
  auto y_grant = y.chan().WaitForGrant(seconds(20));
  ASSERT_TRUE(y_grant.ok()) << y_grant.status().ToString();
  (void)y.Do([&](shm::ClientChannel& ch) {
    (void)ch.ReportBurstEnd(shm::MonotonicNowNs(), 1000);
    return ch.Release(y_grant->seq, /*want_again=*/false);
  });
  // x's next burst is served without x asking again (a shim waiting to be made resident does
  // not ask twice).
  auto next = x.chan().WaitForGrant(seconds(20));
  EXPECT_TRUE(next.ok()) << "x's next burst was never granted: its swap-in request was lost";
  if (next.ok()) {
    EXPECT_GT(next->seq, taken);
  }
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.lease_takes, 1U);
  EXPECT_EQ(stats.lease_unconfirmed, 1U) << "the race did not happen as scripted";
}

}  // namespace
}  // namespace gshare::arbiter
