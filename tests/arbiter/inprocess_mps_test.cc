// An MPS client's memory stays on its GPU (docs/arbiter.md, "Co-running"): the arbiter tells
// the policy (FunctionSpec::pinned) and refuses any swap-out or move of it whoever asks
// (RefusePinned, counter mps_pins_refused); with mps_swaps_verified, swap-outs and swap-ins on
// its own GPU are allowed (FunctionSpec::pinned_parkable). Driven in-process with scripted clients
// (the harness is inprocess_arbiter.h): a scripted client reports an MPS share at registration.
// Also co-running on a marked GPU: one uid per MPS server in the share query's answers (orphaned
// MPS clients counted), room for MPS clients' pinned memory, and the revocation of a co-run set
// whose member's latency threatens its SLO.
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "inprocess_arbiter.h"

namespace gshare::arbiter {
namespace {

using inproc::InProcessArbiter;
using inproc::kOtherUid;
using inproc::ObeyNextOrder;
using inproc::OtherUidQuerier;
using inproc::OwnQuery;
using inproc::RegisterScripted;
using inproc::Scripted;
using std::chrono::milliseconds;
using std::chrono::seconds;

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

// ---- One uid per MPS server (docs/arbiter.md, "Co-running") ----

// MPS serves one uid per server at a time: with an MPS client of the test's uid registered on
// the co-run GPU 0, a process of another uid asking for its share is answered "not co-run"
// (so its shim sets no MPS variable), the reason naming the uid served; the served uid is still
// answered a share. Without the rule the other uid got a share, and its process failed at cuInit
// (simcuda: CUDA_ERROR_MPS_SERVER_NOT_READY) or waited for the server (a real GPU).
TEST(ArbiterInProcess, AShareQueryOfAnotherUidThanTheMpsServersIsAnsweredNotCorun) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to ask as another uid";
  ASSERT_NE(::getuid(), kOtherUid);
  InProcessArbiter arb;
  arb.config().corun.gpus = {0};
  OtherUidQuerier other(arb.socket());  // forked before the arbiter's thread
  ASSERT_TRUE(arb.Start());
  Scripted m = RegisterScripted(arb.socket(), "m", 64ULL << 20, 0, shm::kNoGpu, 0, /*mps_share=*/50);
  ASSERT_NE(m.chan, nullptr);

  const std::string answer = other.Ask();
  EXPECT_EQ(answer.rfind("corun=0 gpu=0 reason=", 0), 0U) << answer;
  EXPECT_NE(answer.find("serves uid " + std::to_string(::getuid())), std::string::npos) << answer;
  EXPECT_NE(answer.find("one uid per server"), std::string::npos) << answer;

  const shm::ShareAnswer own = OwnQuery(arb.socket());
  EXPECT_TRUE(own.corun) << own.reason;
  EXPECT_EQ(own.gpu, 0U);
  EXPECT_GE(own.share_pct, 1U);
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.share_queries, 2U);
}

// A share answered to one uid stands for its process between its cuInit (when it joins the
// server) and its registration: another uid asking meanwhile is answered "not co-run".
TEST(ArbiterInProcess, AShareJustAnsweredToOneUidKeepsTheMpsServerFromAnother) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to ask as another uid";
  InProcessArbiter arb;
  arb.config().corun.gpus = {0};
  OtherUidQuerier other(arb.socket());
  ASSERT_TRUE(arb.Start());
  const shm::ShareAnswer own = OwnQuery(arb.socket());  // nobody served yet: a share
  EXPECT_TRUE(own.corun) << own.reason;
  const std::string answer = other.Ask();
  EXPECT_EQ(answer.rfind("corun=0 gpu=0 reason=", 0), 0U) << answer;
  EXPECT_NE(answer.find("promised to uid " + std::to_string(::getuid())), std::string::npos)
      << answer;
}

// An MPS client the arbiter disconnected while its process lives (an orphan) is still the MPS
// server's client: another uid asking for a share is answered "not co-run" as long as the
// orphan stands. Before orphans were counted, the other uid got a share and its process would
// have failed at cuInit next to the live client of another user.
TEST(ArbiterInProcess, AnOrphanedMpsClientStillKeepsTheServerFromAnotherUid) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to ask as another uid";
  InProcessArbiter arb;
  arb.EnableControl();
  arb.config().corun.gpus = {0};
  OtherUidQuerier other(arb.socket());
  ASSERT_TRUE(arb.Start());
  Scripted m =
      RegisterScripted(arb.socket(), "m", 64ULL << 20, 0, shm::kNoGpu, 0, /*mps_share=*/50);
  ASSERT_NE(m.chan, nullptr);
  ASSERT_TRUE(inproc::MakeMalformedAndWaitForDisconnect(*m.chan, m.reg.connection.get()));
  nlohmann::json st;
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  do {
    st = arb.Status();
    if (st.is_object() && st["clients"] == 0 && st["orphans"].size() == 1) break;
    std::this_thread::sleep_for(milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(st["orphans"].size(), 1U) << st.dump(1);

  const std::string answer = other.Ask();
  EXPECT_EQ(answer.rfind("corun=0 gpu=0 reason=", 0), 0U) << answer;
  EXPECT_NE(answer.find("serves uid " + std::to_string(::getuid())), std::string::npos) << answer;
}

// ---- The GPU of a share answer (docs/arbiter.md, "Co-running") ----

// A process of the test's uid that asks for its MPS share (64 MiB) at its first step and
// registers as an MPS client at the share it was answered at its second (each step's line: the
// answer as AnswerText, then "gpu=<ordinal>" of the registration). Forked before the arbiter's
// thread starts.
std::vector<std::function<std::string()>> ShareThenRegister(const std::string& socket) {
  auto answered = std::make_shared<shm::ShareAnswer>();
  auto registered = std::make_shared<shm::Registration>();  // kept: registered until the end
  return {[socket, answered] {
            shm::ShareQuery q;
            q.quota_bytes = 64ULL << 20;
            q.slo_ms = 100;
            q.function_name = "mps-client";
            const auto answer = shm::QueryShare(socket, q, std::chrono::seconds(10));
            if (answer.ok()) *answered = *answer;
            return inproc::AnswerText(answer);
          },
          [socket, answered, registered] {
            shm::RegisterRequest req;
            req.quota_bytes = 64ULL << 20;
            req.slo_ms = 100;
            req.function_name = "mps-client";
            req.mps_share = answered->corun ? answered->share_pct : 0;
            auto reg = shm::Register(socket, req, std::chrono::seconds(10));
            if (!reg.ok()) return "error: " + reg.status().ToString();
            *registered = std::move(*reg);
            return "gpu=" + std::to_string(registered->reply.gpu);
          }};
}

// A process answered "GPU 0, co-run" is an MPS client of GPU 0's server from its cuInit on, so
// it registers on GPU 0 even when, by then, another GPU has more memory left to promise (here:
// a 512 MiB vGPU registered on GPU 0 between the answer and the registration). Before, the
// registration chose its GPU afresh and put the MPS client on GPU 1, where the arbiter counted
// it, co-ran it and kept its memory, while its kernels ran under GPU 0's server (in 3 of 9
// saved quick co-run demos, GPU 0 then had one MPS client and formed no set).
TEST(ArbiterInProcess, AnMpsClientRegistersOnTheGpuItsShareWasAnsweredFor) {
  InProcessArbiter arb;
  arb.config().gpu_count = 2;
  arb.config().corun.gpus = {0};
  inproc::ForkedSteps child(::getuid(), ShareThenRegister(arb.socket()));  // before Start
  ASSERT_TRUE(arb.Start());
  EXPECT_EQ(child.Step(), "corun=1 gpu=0 reason=");
  Scripted x = RegisterScripted(arb.socket(), "x", 512ULL << 20);  // the emptiest GPU: 0 (a tie)
  ASSERT_NE(x.chan, nullptr);
  ASSERT_EQ(x.reg.reply.gpu, 0U);
  EXPECT_EQ(child.Step(), "gpu=0") << "the MPS client registered away from its server's GPU";
  // A vGPU that is not an MPS client still goes where there is most room.
  Scripted y = RegisterScripted(arb.socket(), "y", 64ULL << 20);
  ASSERT_NE(y.chan, nullptr);
  EXPECT_EQ(y.reg.reply.gpu, 1U);
}

// A function declaring demands short of the whole GPU (one the policy could co-run) is answered
// the GPU marked for co-running, although the unmarked one would be chosen for a new vGPU (a tie
// goes to GPU 0); one of unknown demand (it never co-runs) is not. Once the marked GPU's pins
// leave no room for its quota, it goes where a new vGPU would, not co-run. Before, a co-runnable
// function landed on the marked GPU only by chance: the demo's servers alternated between two
// GPUs, and some runs left the marked one with fewer than two MPS clients.
TEST(ArbiterInProcess, AFunctionThatCouldCoRunIsAnsweredTheMarkedGpu) {
  InProcessArbiter arb;
  arb.config().gpu_count = 2;
  arb.config().corun.gpus = {1};
  ASSERT_TRUE(arb.Start());
  const auto ask = [&](uint64_t quota, uint8_t demand) {
    shm::ShareQuery q;
    q.quota_bytes = quota;
    q.slo_ms = 100;
    q.function_name = "f";
    q.compute_demand_pct = demand;
    q.bandwidth_demand_pct = demand;
    return inproc::AnswerText(shm::QueryShare(arb.socket(), q, std::chrono::seconds(10)));
  };
  EXPECT_EQ(ask(64ULL << 20, 10), "corun=1 gpu=1 reason=");
  EXPECT_EQ(ask(64ULL << 20, 0), "corun=0 gpu=0 reason=GPU 0 is not marked for co-running");
  // An MPS client of 600 MiB registers (on GPU 1, where its share was answered): another
  // 600 MiB no longer fits beside it there.
  Scripted m = RegisterScripted(arb.socket(), "m", kQuota, 0, shm::kNoGpu, 0, /*mps_share=*/25);
  ASSERT_NE(m.chan, nullptr);
  EXPECT_EQ(m.reg.reply.gpu, 1U);
  EXPECT_EQ(ask(kQuota, 10), "corun=0 gpu=0 reason=GPU 0 is not marked for co-running");
  EXPECT_EQ(ask(64ULL << 20, 10), "corun=1 gpu=1 reason=");
}

// ---- Room for pinned memory (docs/arbiter.md, "Co-running") ----

// Unless mps_swaps_verified, an MPS client's memory never leaves its GPU: with m (an MPS client
// of 600 MiB) on the 1 GiB GPU 0, a share for another 600 MiB is answered "not co-run" (its
// process then runs exclusively and can be swapped), while 64 MiB still gets a share. On the
// H200 demo (2026-12-04) such a function was answered a share, started swapped out and never
// came in: nothing could make room beside the pinned MPS clients.
TEST(ArbiterInProcess, AShareWhoseQuotaDoesNotFitBesideTheMpsClientsIsAnsweredNotCorun) {
  for (const bool verified : {false, true}) {
    SCOPED_TRACE(verified ? "mps_swaps_verified" : "not verified");
    InProcessArbiter arb;
    arb.config().corun.gpus = {0};
    arb.config().corun.mps_swaps_verified = verified;
    ASSERT_TRUE(arb.Start());
    Scripted m = RegisterScripted(arb.socket(), "m", kQuota, 0, shm::kNoGpu, 0, /*mps_share=*/50);
    ASSERT_NE(m.chan, nullptr);
    const shm::ShareAnswer big = OwnQuery(arb.socket(), kQuota);
    if (verified) {
      EXPECT_TRUE(big.corun) << big.reason;  // m can be parked on its GPU to make room
    } else {
      EXPECT_FALSE(big.corun);
      EXPECT_NE(big.reason.find("do not fit beside"), std::string::npos) << big.reason;
      EXPECT_NE(big.reason.find("mps_swaps_verified"), std::string::npos) << big.reason;
    }
    const shm::ShareAnswer small = OwnQuery(arb.socket(), 64ULL << 20);
    EXPECT_TRUE(small.corun) << small.reason;
  }
}

// The shares of processes that have not registered yet count too: two processes asking for
// 600 MiB each at once (as the demo's servers start) get one share between them; the same
// process asking again replaces its own promise and is answered a share. (Once the second is
// answered "not co-run", its 600 MiB vGPU is room that further shares must leave:
// MpsContext.AVgpuAnsweredNotCorunIsRoomSharesMustLeave.)
TEST(ArbiterInProcess, SharesAnsweredButNotYetRegisteredCountAgainstTheRoom) {
  InProcessArbiter arb;
  arb.config().corun.gpus = {0};
  OtherUidQuerier second(arb.socket(), ::getuid(), kQuota);  // forked before the arbiter's thread
  ASSERT_TRUE(arb.Start());
  const shm::ShareAnswer first = OwnQuery(arb.socket(), kQuota);
  EXPECT_TRUE(first.corun) << first.reason;
  const shm::ShareAnswer again = OwnQuery(arb.socket(), kQuota);
  EXPECT_TRUE(again.corun) << again.reason;
  const std::string answer = second.Ask();
  EXPECT_EQ(answer.rfind("corun=0 gpu=0 reason=", 0), 0U) << answer;
  EXPECT_NE(answer.find("do not fit beside"), std::string::npos) << answer;
}

// ---- Revocation of a co-run set (docs/arbiter.md, "Co-running") ----

// An MPS client of the test's uid (share 30%) declaring small demands, so that the policy
// co-runs it; 64 MiB, resident at once; its SLO 1 s.
shm::RegisterRequest SmallMpsFunction(const std::string& name) {
  shm::RegisterRequest req;
  req.quota_bytes = 64ULL << 20;
  req.slo_ms = 1000;
  req.function_name = name;
  req.mps_share = 30;
  req.compute_demand_pct = 10;
  req.bandwidth_demand_pct = 10;
  return req;
}

// Starts a burst (begun at `start_ns`) and asks for the GPU; the grant within `timeout`.
shm::Result<shm::GrantInfo> Ask(Scripted& s, uint64_t start_ns, milliseconds timeout) {
  (void)s.chan->ReportBurstStart(start_ns);
  (void)s.chan->RequestSwapIn();
  return s.chan->WaitForGrant(timeout);
}

// Ends the burst, which held the GPU `gpu_time_ns`, and releases the grant `g`.
void Done(Scripted& s, const shm::GrantInfo& g, uint64_t gpu_time_ns = 1000) {
  (void)s.chan->ReportBurstEnd(shm::MonotonicNowNs(), gpu_time_ns);
  (void)s.chan->Release(g.seq, /*want_again=*/false);
}

uint64_t CounterOf(InProcessArbiter& arb, const std::string& key) {
  return arb.Status().value("counters", nlohmann::json::object()).value(key, uint64_t{0});
}

// Waits (bounded) until the arbiter's counter `key` reaches `at_least`.
bool CounterReaches(InProcessArbiter& arb, const std::string& key, uint64_t at_least) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (CounterOf(arb, key) < at_least) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// Each of `clients` runs `rounds` bursts alone, holding the GPU `hold` each: the solo reference
// its co-run bursts are judged by (a function without one neither joins a set nor is joined),
// and what aggressive learns a function from before it co-runs it (4 bursts and a gap between
// requests: policy::ExecPredictor::kMinSamples). Spaced `hold` + 150 ms apart: requests closer
// together than a function's bursts are long would load it beyond what the policy co-runs
// (kCorunMaxLoad).
void RunSoloBursts(std::initializer_list<Scripted*> clients, milliseconds hold, int rounds = 4) {
  for (int round = 0; round < rounds; ++round) {
    for (Scripted* s : clients) {
      auto g = Ask(*s, shm::MonotonicNowNs(), milliseconds(20000));
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      std::this_thread::sleep_for(hold);
      Done(*s, *g, static_cast<uint64_t>(std::chrono::nanoseconds(hold).count()));
      std::this_thread::sleep_for(milliseconds(150));
    }
  }
}

// Three MPS clients of one uid co-run on GPU 0 (a holds, b and c join), each having run a burst
// alone first (100 ms). c's burst ends with a latency above corun_threat percent of its SLO,
// having held the GPU 550 ms where it holds it 100 ms alone (5.5x in a set of 3: what co-running
// may do, kMaxSlowdownPerMember): the arbiter revokes the set (corun_revocations
// counts it), asks b — the later of the remaining holders — to yield while a keeps the GPU, and backs
// GPU 0 off. Within the back-off nobody joins a holder: c's next burst waits for a's and b's
// grants to end and then runs alone (corun_joins unchanged), and the status shows the back-off.
TEST(ArbiterInProcess, ACoRunSetWhoseMemberThreatensItsSloIsBrokenUpAndBacksOff) {
  InProcessArbiter arb;
  arb.EnableControl();
  arb.config().corun.gpus = {0};
  arb.config().corun.threat_percent = 50;  // 500 ms of c's 1 s SLO
  arb.config().corun.backoff = seconds(60);
  arb.config().slice = seconds(5);  // no slice ends within the test
  ASSERT_TRUE(arb.Start());
  Scripted a = RegisterScripted(arb.socket(), SmallMpsFunction("a"));
  Scripted b = RegisterScripted(arb.socket(), SmallMpsFunction("b"));
  Scripted c = RegisterScripted(arb.socket(), SmallMpsFunction("c"));
  ASSERT_TRUE(a.chan && b.chan && c.chan);
  ASSERT_NO_FATAL_FAILURE(RunSoloBursts({&a, &b, &c}, milliseconds(100)));

  auto ga = Ask(a, shm::MonotonicNowNs(), milliseconds(20000));
  ASSERT_TRUE(ga.ok()) << ga.status().ToString();
  auto gb = Ask(b, shm::MonotonicNowNs(), milliseconds(20000));
  ASSERT_TRUE(gb.ok()) << "b did not join a: " << gb.status().ToString();
  auto gc = Ask(c, shm::MonotonicNowNs(), milliseconds(20000));
  ASSERT_TRUE(gc.ok()) << "c did not join a and b: " << gc.status().ToString();
  EXPECT_EQ(CounterOf(arb, "corun_joins"), 2U);
  EXPECT_EQ(CounterOf(arb, "corun_revocations"), 0U);
  EXPECT_EQ(b.chan->PreemptSeq(), 0U);
  EXPECT_EQ(a.chan->PreemptSeq(), 0U);

  // c's burst runs 550 ms beside them: above 50% of its SLO when it ends.
  std::this_thread::sleep_for(milliseconds(550));
  Done(c, *gc, 550 * 1'000'000ULL);
  ASSERT_TRUE(CounterReaches(arb, "corun_revocations", 1)) << arb.Status().dump();
  // b is asked to yield; a, which has held longest, keeps the GPU.
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (b.chan->PreemptSeq() != gb->seq && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(b.chan->PreemptSeq(), gb->seq) << "b was not asked to yield";
  EXPECT_EQ(a.chan->PreemptSeq(), 0U) << "a was asked to yield";
  const nlohmann::json status = arb.Status();
  ASSERT_TRUE(status["gpus"][0].contains("corun")) << status.dump();
  EXPECT_GT(status["gpus"][0]["corun"].value("backoff_ms", 0), 50000) << status.dump();
  Done(b, *gb);

  // Within the back-off: c asks again while a holds, and is not granted beside it.
  auto again = Ask(c, shm::MonotonicNowNs(), milliseconds(500));
  EXPECT_FALSE(again.ok()) << "c co-ran with a within the back-off";
  Done(a, *ga);
  if (!again.ok()) again = c.chan->WaitForGrant(seconds(20));
  ASSERT_TRUE(again.ok()) << "c was never granted once a was done: " << again.status().ToString();
  Done(c, *again);
  EXPECT_EQ(CounterOf(arb, "corun_joins"), 2U) << "a set formed within the back-off";
  const ArbiterStats stats = arb.Finish();
  // (a's and b's bursts ran beside c as long, but held the GPU no longer than alone.)
  EXPECT_EQ(stats.corun_revocations, 1U);
  EXPECT_EQ(stats.corun_joins, 2U);
}

// A burst is held against co-running only for what co-running added to it. b has run no burst
// alone: it does not join a (its grant waits until a is done and then runs alone; a server's
// first bursts, its loads, run so). Under aggressive-corun-pack, whose dispatch asks to co-run
// functions it has not learned yet (aggressive does not: Corun.UnderAggressiveOnlyLearnedFunctionsCoRun),
// so that the arbiter's own rule is what refuses b's first grant. b's solo burst holds the GPU 600 ms; its next burst, beside
// a, takes 620 ms: over corun_threat (500 ms of its 1 s SLO), but 20 ms longer than alone,
// under 5% of its SLO: the set stands. Before, b joined at once and a burst over the threat
// revoked the set whatever it took alone (the demo's servers' loads revoked GPU 0 in 5 of 6
// saved quick co-run demos, before any of them was ready).
TEST(ArbiterInProcess, OnlyWhatCoRunningAddedToABurstCountsAgainstTheSet) {
  InProcessArbiter arb;
  arb.EnableControl();
  arb.config().policy = "aggressive-corun-pack";
  arb.config().corun.gpus = {0};
  arb.config().corun.threat_percent = 50;
  arb.config().slice = seconds(5);
  ASSERT_TRUE(arb.Start());
  Scripted a = RegisterScripted(arb.socket(), SmallMpsFunction("a"));
  Scripted b = RegisterScripted(arb.socket(), SmallMpsFunction("b"));
  ASSERT_TRUE(a.chan && b.chan);

  auto ga = Ask(a, shm::MonotonicNowNs(), milliseconds(20000));
  ASSERT_TRUE(ga.ok()) << ga.status().ToString();
  auto gb = Ask(b, shm::MonotonicNowNs(), milliseconds(300));
  EXPECT_FALSE(gb.ok()) << "b joined a set without a solo burst";
  EXPECT_TRUE(CounterReaches(arb, "corun_refusals", 1)) << arb.Status().dump();
  Done(a, *ga);
  if (!gb.ok()) gb = b.chan->WaitForGrant(seconds(20));
  ASSERT_TRUE(gb.ok()) << "b never ran alone: " << gb.status().ToString();
  std::this_thread::sleep_for(milliseconds(600));
  Done(b, *gb, 600'000'000ULL);  // its solo burst: 600 ms
  EXPECT_EQ(CounterOf(arb, "corun_joins"), 0U);
  // (Requests of b closer together than its bursts are long would load it beyond what the
  // policy co-runs.)
  std::this_thread::sleep_for(milliseconds(300));

  ga = Ask(a, shm::MonotonicNowNs(), milliseconds(20000));
  ASSERT_TRUE(ga.ok()) << ga.status().ToString();
  gb = Ask(b, shm::MonotonicNowNs(), milliseconds(20000));
  ASSERT_TRUE(gb.ok()) << "b did not join a: " << gb.status().ToString();
  EXPECT_EQ(CounterOf(arb, "corun_joins"), 1U);
  std::this_thread::sleep_for(milliseconds(620));
  Done(b, *gb, 620'000'000ULL);
  Done(a, *ga);
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.corun_revocations, 0U) << "a burst as long as alone revoked the set";
  EXPECT_EQ(stats.corun_joins, 1U);
}

}  // namespace
}  // namespace gshare::arbiter
