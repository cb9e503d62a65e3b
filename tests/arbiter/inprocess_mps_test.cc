// An MPS client's memory stays on its GPU (docs/arbiter.md, "Co-running"): the arbiter tells
// the policy (FunctionSpec::pinned) and refuses any swap-out or move of it whoever asks
// (RefusePinned, counter mps_pins_refused); with mps_swaps_verified, swap-outs and swap-ins on
// its own GPU are allowed (FunctionSpec::pinned_parkable). Driven in-process with scripted clients (the
// harness is inprocess_arbiter.h): a scripted client reports an MPS share at registration.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "inprocess_arbiter.h"

namespace gshare::arbiter {
namespace {

using inproc::InProcessArbiter;
using inproc::ObeyNextOrder;
using inproc::RegisterScripted;
using inproc::Scripted;
using std::chrono::milliseconds;

constexpr uint64_t kQuota = 600ULL << 20;  // two never fit on the 1 GiB GPU together

// Starts `arb` (control socket on) and registers m, an MPS client (600 MiB, resident), and b
// (600 MiB: does not fit beside it, so it starts swapped out: that order, *b_out, obeyed).
// Call with ASSERT_NO_FATAL_FAILURE.
void StartWithMpsClientAndAnother(InProcessArbiter& arb, Scripted& m, Scripted& b,
                                  shm::SwapOrder* b_out) {
  arb.EnableControl();
  ASSERT_TRUE(arb.Start());
  m = RegisterScripted(arb.socket(), "m", kQuota, 0, shm::kNoGpu, 0, /*mps_share=*/50);
  ASSERT_NE(m.chan, nullptr);
  b = RegisterScripted(arb.socket(), "b", kQuota);
  ASSERT_NE(b.chan, nullptr);
  *b_out = ObeyNextOrder(b, 0, 0);
  ASSERT_EQ(b_out->op, shm::SwapOp::kSwapOut);
}

// m (an MPS client, 600 MiB, resident) and b (600 MiB: does not fit beside it on the 1 GiB GPU)
// share one GPU. b's request would have had m swapped out to make room (the policy's cheapest
// victim, or the arbiter's MakeRoom of a shadow): m is never ordered out, b waits. gshare-ctl
// evict of m answers an error naming the reason, and a drain leaves m where it is and says so.
TEST(ArbiterInProcess, AnMpsClientsMemoryStaysOnItsGpu) {
  InProcessArbiter arb;
  Scripted m, b;
  shm::SwapOrder out;
  ASSERT_NO_FATAL_FAILURE(StartWithMpsClientAndAnother(arb, m, b, &out));
  const uint32_t m_id = m.reg.reply.client_id;

  (void)b.chan->ReportBurstStart(shm::MonotonicNowNs());
  (void)b.chan->RequestSwapIn();
  auto order = m.chan->WaitForSwapOrder(0, milliseconds(1500));
  EXPECT_FALSE(order.ok()) << "m was ordered to swap "
                           << (order->op == shm::SwapOp::kSwapOut ? "out" : "in");

  const nlohmann::json evict = arb.Control({{"cmd", "evict"}, {"client", m_id}});
  EXPECT_EQ(evict.value("ok", true), false) << evict.dump();
  EXPECT_NE(evict.value("error", "").find("MPS client: its memory stays on its GPU"),
            std::string::npos)
      << evict.dump();

  const nlohmann::json drain = arb.Control({{"cmd", "drain"}, {"gpu", 0}});
  EXPECT_EQ(drain.value("ok", false), true) << drain.dump();
  ASSERT_TRUE(drain.contains("mps_clients_staying")) << drain.dump();
  EXPECT_EQ(drain["mps_clients_staying"], nlohmann::json::array({m_id})) << drain.dump();
  order = m.chan->WaitForSwapOrder(0, milliseconds(500));
  EXPECT_FALSE(order.ok()) << "m was ordered out by the drain";
  const nlohmann::json status = arb.Status();
  EXPECT_GE(status["counters"].value("mps_pins_refused", 0), 2) << status.dump();
  EXPECT_EQ(arb.Control({{"cmd", "undrain"}, {"gpu", 0}}).value("ok", false), true);

  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.swap_outs, 1U) << "only b's, at its registration";
  EXPECT_GE(stats.mps_pins_refused, 2U);
}

// With mps_swaps_verified (the operator checked the same-address swap under MPS on this node),
// an MPS client is swapped out and in on its own GPU like any vGPU: the same memory pressure as
// above takes m (the only victim) for b, m's next request swaps b out and m back in onto GPU 0,
// and gshare-ctl evict of m swaps it out. Nothing is refused (mps_pins_refused stays 0).
TEST(ArbiterInProcess, WithMpsSwapsVerifiedAnMpsClientIsSwappedOutAndInOnItsGpu) {
  InProcessArbiter arb;
  arb.config().corun.mps_swaps_verified = true;
  Scripted m, b;
  shm::SwapOrder b_out;
  ASSERT_NO_FATAL_FAILURE(StartWithMpsClientAndAnother(arb, m, b, &b_out));
  const uint32_t m_id = m.reg.reply.client_id;

  // b's request: m, idle, is swapped out (on its GPU) to make room; b is swapped in and runs.
  (void)b.chan->ReportBurstStart(shm::MonotonicNowNs());
  (void)b.chan->RequestSwapIn();
  const shm::SwapOrder m_out = ObeyNextOrder(m, 0, kQuota);
  ASSERT_EQ(m_out.op, shm::SwapOp::kSwapOut) << "m was not swapped out for b";
  const shm::SwapOrder b_in = ObeyNextOrder(b, b_out.seq, kQuota);
  ASSERT_EQ(b_in.op, shm::SwapOp::kSwapIn);
  auto grant = b.chan->WaitForGrant(std::chrono::seconds(30));
  ASSERT_TRUE(grant.ok()) << grant.status().ToString();
  (void)b.chan->ReportBurstEnd(shm::MonotonicNowNs(), 1000);
  (void)b.chan->Release(grant->seq, /*want_again=*/false);

  // m's request: b makes room, m comes back onto its own GPU (0), at once runnable.
  (void)m.chan->ReportBurstStart(shm::MonotonicNowNs());
  (void)m.chan->RequestSwapIn();
  EXPECT_EQ(ObeyNextOrder(b, b_in.seq, kQuota).op, shm::SwapOp::kSwapOut);
  const shm::SwapOrder m_in = ObeyNextOrder(m, m_out.seq, kQuota);
  ASSERT_EQ(m_in.op, shm::SwapOp::kSwapIn);
  EXPECT_EQ(m_in.target_gpu, 0U);
  grant = m.chan->WaitForGrant(std::chrono::seconds(30));
  ASSERT_TRUE(grant.ok()) << grant.status().ToString();
  (void)m.chan->ReportBurstEnd(shm::MonotonicNowNs(), 1000);
  (void)m.chan->Release(grant->seq, /*want_again=*/false);

  // gshare-ctl evict of m: a swap-out on its GPU, ordered like any vGPU's.
  const nlohmann::json evict = arb.Control({{"cmd", "evict"}, {"client", m_id}});
  EXPECT_EQ(evict.value("ok", false), true) << evict.dump();
  EXPECT_EQ(ObeyNextOrder(m, m_in.seq, 0).op, shm::SwapOp::kSwapOut);
  const nlohmann::json status = arb.Status();
  EXPECT_EQ(status["counters"].value("mps_pins_refused", -1), 0) << status.dump();

  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.swap_outs, 4U) << "b at registration, m for b, b for m, m by evict";
  EXPECT_EQ(stats.mps_pins_refused, 0U);
}

// gshare-ctl evict of a resident MPS client, by the setting: refused (the error names the
// reason, mps_pins_refused counts it, no order) without mps_swaps_verified; ordered with it.
TEST(ArbiterInProcess, EvictOfAnMpsClientFollowsMpsSwapsVerified) {
  for (const bool verified : {false, true}) {
    SCOPED_TRACE(verified ? "mps_swaps_verified = true" : "mps_swaps_verified = false");
    InProcessArbiter arb;
    arb.config().corun.mps_swaps_verified = verified;
    arb.EnableControl();
    ASSERT_TRUE(arb.Start());
    Scripted m = RegisterScripted(arb.socket(), "m", 256ULL << 20, 0, shm::kNoGpu, 0, 50);
    ASSERT_NE(m.chan, nullptr);
    const nlohmann::json evict =
        arb.Control({{"cmd", "evict"}, {"client", m.reg.reply.client_id}});
    EXPECT_EQ(evict.value("ok", !verified), verified) << evict.dump();
    EXPECT_EQ(evict.value("error", "").find("MPS client: its memory stays on its GPU") !=
                  std::string::npos,
              !verified)
        << evict.dump();
    // The order, when there is one, is in m's channel once evict answered (TryIssue ran).
    EXPECT_EQ(m.chan->ReadSwapOrder().op, verified ? shm::SwapOp::kSwapOut : shm::SwapOp::kNone);
    const ArbiterStats stats = arb.Finish();
    EXPECT_EQ(stats.mps_pins_refused, verified ? 0U : 1U);
    EXPECT_EQ(stats.swap_outs, verified ? 1U : 0U);
  }
}

}  // namespace
}  // namespace gshare::arbiter
