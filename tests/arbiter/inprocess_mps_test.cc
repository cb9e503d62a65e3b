// An MPS client's memory stays on its GPU (docs/arbiter.md, "Co-running"): the arbiter tells
// the policy (FunctionSpec::pinned) and refuses any swap-out or move of it whoever asks
// (RefusePinned, counter mps_pins_refused). Driven in-process with scripted clients (the
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

// m (an MPS client, 600 MiB, resident) and b (600 MiB: does not fit beside it on the 1 GiB GPU)
// share one GPU. b's request would have had m swapped out to make room (the policy's cheapest
// victim, or the arbiter's MakeRoom of a shadow): m is never ordered out, b waits. gshare-ctl
// evict of m answers an error naming the reason, and a drain leaves m where it is and says so.
TEST(ArbiterInProcess, AnMpsClientsMemoryStaysOnItsGpu) {
  constexpr uint64_t kQuota = 600ULL << 20;
  InProcessArbiter arb;
  arb.EnableControl();
  ASSERT_TRUE(arb.Start());
  Scripted m = RegisterScripted(arb.socket(), "m", kQuota, 0, shm::kNoGpu, 0, /*mps_share=*/50);
  ASSERT_NE(m.chan, nullptr);
  const uint32_t m_id = m.reg.reply.client_id;
  Scripted b = RegisterScripted(arb.socket(), "b", kQuota);  // does not fit: starts swapped out
  ASSERT_NE(b.chan, nullptr);
  const shm::SwapOrder out = ObeyNextOrder(b, 0, 0);
  ASSERT_EQ(out.op, shm::SwapOp::kSwapOut);

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

}  // namespace
}  // namespace gshare::arbiter
