// The channel: layout invariants, sealing, attach checks, grant/yield/preempt/swap flows
// between an arbiter view and a client view, and validation of everything a client writes.
#include "gshare/shm/channel.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "gshare/shm/futex.h"
#include "gshare/shm/spin.h"
#include "gshare/shm/wire.h"
#include "test_util.h"

namespace gshare::shm {
namespace {

using namespace std::chrono_literals;

ChannelInit Init() { return ChannelInit{5, 2, 77, 1ULL << 30, 20'000'000, 100}; }

struct Pair {
  ArbiterChannel arbiter;
  ClientChannel client;
};

Pair MakePair() {
  Pair p;
  auto a = ArbiterChannel::Create(Init());
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  p.arbiter = std::move(a).value();
  auto c = ClientChannel::Attach(UniqueFd(::fcntl(p.arbiter.channel_fd(), F_DUPFD_CLOEXEC, 0)),
                                 UniqueFd(::fcntl(p.arbiter.doorbell_fd(), F_DUPFD_CLOEXEC, 0)));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  p.client = std::move(c).value();
  return p;
}

TEST(ChannelTest, LayoutInvariants) {
  // Single-writer lines never share a cache line (also static_asserted in the header).
  const auto line = [](const void* p) { return reinterpret_cast<uintptr_t>(p) / kCacheLine; };
  ChannelLayout layout{};
  EXPECT_NE(line(&layout.grant), line(&layout.control));
  EXPECT_NE(line(&layout.control), line(&layout.client_token));
  EXPECT_NE(line(&layout.burst), line(&layout.ack));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&layout.grant.token) % 4, 0U);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&layout.order.order_seq) % 4, 0U);
  EXPECT_EQ(MakeToken(5, true), 11U);
  EXPECT_EQ(TokenSeq(11), 5U);
  EXPECT_TRUE(TokenGranted(11));
  EXPECT_FALSE(TokenGranted(MakeToken(5, false)));
}

TEST(ChannelTest, SegmentIsSealedAndHeaderFilled) {
  Pair p = MakePair();
  const int fd = p.arbiter.channel_fd();
  const int seals = ::fcntl(fd, F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_NE(::ftruncate(fd, 0), 0);  // a client cannot shrink it under the arbiter (SIGBUS)
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(fd, 1 << 20), 0);
  const ChannelHeader& h = p.client.header();
  EXPECT_EQ(h.magic, kChannelMagic);
  EXPECT_EQ(h.abi_version, kChannelAbiVersion);
  EXPECT_EQ(h.layout_size, sizeof(ChannelLayout));
  EXPECT_EQ(h.client_id, 5U);
  EXPECT_EQ(h.gpu, 2U);
  EXPECT_EQ(h.arbiter_epoch, 77U);
  EXPECT_EQ(h.quota_bytes, 1ULL << 30);
  EXPECT_EQ(h.slo_ms, 100U);
}

UniqueFd MemfdWith(size_t size, bool seal, uint64_t magic, uint32_t version) {
  UniqueFd fd(::memfd_create("fake", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  ChannelHeader h{};
  h.magic = magic;
  h.abi_version = version;
  h.layout_size = sizeof(ChannelLayout);
  EXPECT_EQ(::pwrite(fd.get(), &h, sizeof(h), 0), static_cast<ssize_t>(sizeof(h)));
  if (seal) {
    EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  }
  return fd;
}

TEST(ChannelTest, AttachChecks) {
  EXPECT_TRUE(ChannelSegment::Attach(MemfdWith(4096, true, kChannelMagic, kChannelAbiVersion)).ok());
  auto unsealed = ChannelSegment::Attach(MemfdWith(4096, false, kChannelMagic, kChannelAbiVersion));
  EXPECT_EQ(unsealed.status().code(), StatusCode::kMalformed);
  EXPECT_NE(unsealed.status().message().find("not sealed"), std::string::npos);
  EXPECT_EQ(ChannelSegment::Attach(MemfdWith(8192, true, kChannelMagic, kChannelAbiVersion)).status().code(),
            StatusCode::kMalformed);
  EXPECT_EQ(ChannelSegment::Attach(MemfdWith(4096, true, 1234, kChannelAbiVersion)).status().code(),
            StatusCode::kMalformed);
  auto version = ChannelSegment::Attach(MemfdWith(4096, true, kChannelMagic, kChannelAbiVersion + 1));
  EXPECT_EQ(version.status().code(), StatusCode::kVersionMismatch);
  const std::string theirs = "ABI version " + std::to_string(kChannelAbiVersion + 1);
  EXPECT_NE(version.status().message().find(theirs), std::string::npos) << version.status().ToString();
  // A pipe is not a memfd.
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  ::close(pipefd[1]);
  EXPECT_FALSE(ChannelSegment::Attach(UniqueFd(pipefd[0])).ok());
  EXPECT_EQ(ArbiterChannel::Create(ChannelInit{}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChannelTest, SwapProgressReachesTheArbiterAsAHint) {
  Pair p = MakePair();
  EXPECT_EQ(p.arbiter.ReadSwapProgress().seq, 0U);  // nothing reported yet
  const uint32_t order = p.arbiter.IssueSwapOrder(SwapOp::kSwapOut, 0, MonotonicNowNs());
  p.client.ReportSwapProgress(order, 8u << 20);
  SwapProgress got = p.arbiter.ReadSwapProgress();
  EXPECT_EQ(got.seq, order);
  EXPECT_EQ(got.bytes, 8u << 20);
  p.client.ReportSwapProgress(order, 24u << 20);
  EXPECT_EQ(p.arbiter.ReadSwapProgress().bytes, 24u << 20);
  // A hint, not a report: whatever it says, the validated view stays well-formed.
  p.client.ReportSwapProgress(0xffffffffu, ~0ULL);
  EXPECT_TRUE(p.arbiter.ReadClient(MonotonicNowNs()).ok());
}

TEST(ChannelTest, GrantYieldPreemptFlow) {
  Pair p = MakePair();
  EXPECT_FALSE(p.client.HoldsToken());
  ASSERT_TRUE(p.client.RequestToken().ok());
  auto v = p.arbiter.ReadClient(MonotonicNowNs());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->state, ClientTokenState::kWaiting);

  const uint64_t deadline = MonotonicNowNs() + 20'000'000;
  const uint32_t seq = p.arbiter.Grant(2, deadline);
  auto g = p.client.WaitForGrant(1s);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->seq, seq);
  EXPECT_EQ(g->gpu, 2U);
  EXPECT_EQ(g->slice_deadline_ns, deadline);
  EXPECT_EQ(p.client.LoadToken(), g->token);  // the shim's one-load fast path
  EXPECT_TRUE(p.client.HoldsToken());
  EXPECT_EQ(p.arbiter.ReadClient(MonotonicNowNs())->state, ClientTokenState::kHolding);

  EXPECT_EQ(p.client.PreemptSeq(), 0U);
  p.arbiter.RequestPreempt();
  EXPECT_EQ(p.client.PreemptSeq(), seq);
  ASSERT_TRUE(p.client.BeginDraining().ok());
  EXPECT_EQ(p.arbiter.ReadClient(MonotonicNowNs())->state, ClientTokenState::kDraining);
  EXPECT_FALSE(p.arbiter.Released());
  ASSERT_TRUE(p.client.Release(g->seq, /*want_again=*/true).ok());
  EXPECT_TRUE(p.arbiter.Released());
  EXPECT_FALSE(p.client.HoldsToken());
  EXPECT_EQ(p.arbiter.ReadClient(MonotonicNowNs())->state, ClientTokenState::kWaiting);
  // Released grant is not "held" again: waiting times out until a new grant.
  EXPECT_EQ(p.client.WaitForGrant(1ms).status().code(), StatusCode::kTimeout);
  const uint32_t seq2 = p.arbiter.Grant(2, deadline);
  EXPECT_NE(seq2, seq);
  EXPECT_EQ(p.client.WaitForGrant(1s)->seq, seq2);
  // Revocation withdraws the grant.
  p.arbiter.Revoke();
  EXPECT_FALSE(p.client.HoldsToken());
}

TEST(ChannelTest, WaitForGrantWakesSleepingThreadAndSpinsWhenHinted) {
  Pair p = MakePair();
  // Sleeping waiter: woken by the grant through the futex.
  std::thread waiter([&] { EXPECT_TRUE(p.client.WaitForGrant(30s).ok()); });
  ASSERT_TRUE(testing::WaitUntil([&] { return LoadSeqCst(&p.arbiter.layout()->client_token.token_waiters) == 1; }));
  const uint32_t s1 = p.arbiter.Grant(2, 0);
  waiter.join();
  ASSERT_TRUE(p.client.Release(s1, false).ok());
  // Hinted waiter: spins (never registers as a futex sleeper while the budget lasts).
  p.arbiter.SetNextHint(true, kMaxSpinBudgetNs);
  std::thread spinner([&] { EXPECT_TRUE(p.client.WaitForGrant(30s).ok()); });
  std::this_thread::sleep_for(200us);
  (void)p.arbiter.Grant(2, 0);
  spinner.join();
  EXPECT_EQ(p.arbiter.layout()->control.next_hint, 0U);  // the grant clears the hint
}

TEST(ChannelTest, SwapOrderAndAck) {
  Pair p = MakePair();
  EXPECT_EQ(p.client.ReadSwapOrder().seq, 0U);
  const uint32_t o = p.arbiter.IssueSwapOrder(SwapOp::kSwapIn, 3, MonotonicNowNs());
  auto order = p.client.WaitForSwapOrder(0, 1s);
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(order->seq, o);
  EXPECT_EQ(order->op, SwapOp::kSwapIn);
  EXPECT_EQ(order->target_gpu, 3U);
  EXPECT_EQ(p.client.WaitForSwapOrder(o, 1ms).status().code(), StatusCode::kTimeout);
  ASSERT_TRUE(p.client.AckSwap(o, SwapAckStatus::kOk, 256 << 20, 70'000'000, Residency::kResident, 3, 256 << 20).ok());
  ASSERT_TRUE(p.client.RequestSwapIn().ok());
  auto v = p.arbiter.ReadClient(MonotonicNowNs());
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->ack_seq, o);
  EXPECT_EQ(v->ack_bytes_moved, 256U << 20);
  EXPECT_EQ(v->ack_duration_ns, 70'000'000U);
  EXPECT_EQ(v->residency, Residency::kResident);
  EXPECT_EQ(v->resident_gpu, 3U);
  EXPECT_EQ(v->swapin_requests, 1U);
}

TEST(ChannelTest, BurstReports) {
  Pair p = MakePair();
  const uint64_t t0 = MonotonicNowNs();
  ASSERT_TRUE(p.client.ReportBurstStart(t0).ok());
  auto v = p.arbiter.ReadClient(MonotonicNowNs());
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->in_burst);
  EXPECT_EQ(v->bursts_started, 1U);
  EXPECT_EQ(v->burst_start_ns, t0);
  ASSERT_TRUE(p.client.ReportBurstEnd(t0 + 5'000'000, 3'000'000).ok());
  v = p.arbiter.ReadClient(t0 + 6'000'000);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->in_burst);
  EXPECT_EQ(v->burst_end_ns, t0 + 5'000'000);
  EXPECT_EQ(v->burst_gpu_time_ns, 3'000'000U);
}

TEST(ChannelTest, DoorbellRingsOnlyWhenArmed) {
  Pair p = MakePair();
  ASSERT_TRUE(p.client.RequestToken().ok());
  EXPECT_EQ(*p.arbiter.DrainDoorbell(), 0U);  // not armed: no system call, nothing pending
  p.arbiter.ArmDoorbell();
  ASSERT_TRUE(p.client.ReportBurstStart(MonotonicNowNs()).ok());
  ASSERT_TRUE(p.client.ReportBurstEnd(MonotonicNowNs(), 0).ok());
  EXPECT_EQ(*p.arbiter.DrainDoorbell(), 2U);
  p.arbiter.DisarmDoorbell();
  ASSERT_TRUE(p.client.RequestSwapIn().ok());
  EXPECT_EQ(*p.arbiter.DrainDoorbell(), 0U);
}

// A client caught inside a write of its burst report (seqlock odd) is busy, not malformed: the
// arbiter reads again later; once the write completes the channel reads fine.
TEST(ChannelTest, WriterInsideItsWriteSectionIsBusyNotMalformed) {
  Pair p = MakePair();
  p.client.layout()->burst.version = 3;
  auto v = p.arbiter.ReadClient(MonotonicNowNs());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kTimeout) << v.status().ToString();
  EXPECT_NE(v.status().message().find("burst.version"), std::string::npos) << v.status().ToString();
  p.client.layout()->burst.version = 4;
  EXPECT_TRUE(p.arbiter.ReadClient(MonotonicNowNs()).ok());
}

// A malicious client writes garbage into its lines: ReadClient rejects each with the field.
TEST(ChannelTest, ArbiterValidatesEveryClientField) {
  struct Case {
    const char* field;
    void (*corrupt)(ChannelLayout*);
  };
  const Case cases[] = {
      {"state", [](ChannelLayout* l) { l->client_token.state = 17; }},
      {"burst.in_burst", [](ChannelLayout* l) { l->burst.in_burst = 9; }},
      {"burst.start_ns", [](ChannelLayout* l) { l->burst.start_ns = ~0ULL; }},
      {"burst.end_ns", [](ChannelLayout* l) { l->burst.bursts_started = 1; l->burst.start_ns = 100; l->burst.end_ns = 50; }},
      {"burst.gpu_time_ns", [](ChannelLayout* l) { l->burst.bursts_started = 1; l->burst.start_ns = 100; l->burst.end_ns = 200; l->burst.gpu_time_ns = 500; }},
      {"ack.ack_status", [](ChannelLayout* l) { l->ack.ack_status = 5; }},
      {"ack.ack_seq", [](ChannelLayout* l) { l->ack.ack_seq = 1000; }},
      {"ack.bytes_moved", [](ChannelLayout* l) { l->ack.bytes_moved = ~0ULL; }},
      {"ack.duration_ns", [](ChannelLayout* l) { l->ack.duration_ns = ~0ULL; }},
      {"ack.residency", [](ChannelLayout* l) { l->ack.residency = 4; }},
      {"ack.resident_gpu", [](ChannelLayout* l) { l->ack.resident_gpu = 4096; }},
      {"ack.resident_bytes", [](ChannelLayout* l) { l->ack.resident_bytes = 1ULL << 40; }},
      {"heartbeat.heartbeat_ns", [](ChannelLayout* l) { l->heartbeat.heartbeat_ns = ~0ULL; }},
  };
  for (const Case& c : cases) {
    Pair p = MakePair();
    ASSERT_TRUE(p.arbiter.ReadClient(MonotonicNowNs()).ok()) << c.field;
    c.corrupt(p.client.layout());
    auto v = p.arbiter.ReadClient(MonotonicNowNs());
    ASSERT_FALSE(v.ok()) << c.field;
    EXPECT_EQ(v.status().code(), StatusCode::kMalformed);
    EXPECT_NE(v.status().message().find(c.field), std::string::npos) << v.status().ToString();
  }
  // In-range values pass: a small quota's resident bytes rounded up to a 2 MiB granule.
  {
    Pair p = MakePair();
    p.client.layout()->ack.resident_bytes = Init().quota_bytes + (2 << 20);
    EXPECT_TRUE(p.arbiter.ReadClient(MonotonicNowNs()).ok());
  }
  // Scribbling over the arbiter's own lines does not change the arbiter's truth.
  Pair p = MakePair();
  const uint32_t seq = p.arbiter.Grant(2, 0);
  p.client.layout()->grant.token = MakeToken(seq + 5, true);
  p.client.layout()->client_token.released_seq = seq + 5;
  EXPECT_FALSE(p.arbiter.Released());
  EXPECT_EQ(p.arbiter.grant_seq(), seq);
}


// ---- The lease (docs/protocol.md, "The lease").

TEST(ChannelTest, LeaseOfferedTakenAndAdoptedBecomesTheGrant) {
  Pair p = MakePair();
  EXPECT_FALSE(p.client.TryTakeLease().has_value());  // nothing offered
  const uint32_t g1 = p.arbiter.Grant(2, 1);
  ASSERT_TRUE(p.client.WaitForGrant(1s).ok());
  ASSERT_TRUE(p.client.Release(g1, false).ok());
  const uint32_t seq = p.arbiter.OfferLease(2, 5'000'000, MonotonicNowNs());
  EXPECT_EQ(seq, g1 + 1);
  EXPECT_EQ(p.arbiter.PollLease(), LeaseStatus::kOffered);
  auto taken = p.client.TryTakeLease();
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->seq, seq);
  EXPECT_EQ(taken->gpu, 2U);
  EXPECT_EQ(LoadRelaxed(&p.client.layout()->client_token.state),
            static_cast<uint32_t>(ClientTokenState::kHolding));
  EXPECT_FALSE(p.client.TryTakeLease().has_value());  // taken once only
  EXPECT_EQ(p.arbiter.PollLease(), LeaseStatus::kTaken);
  EXPECT_EQ(p.arbiter.AdoptLease(MonotonicNowNs() + 1'000'000), seq);
  EXPECT_EQ(p.arbiter.PollLease(), LeaseStatus::kNone);
  EXPECT_EQ(p.arbiter.grant_seq(), seq);
  EXPECT_TRUE(p.client.HoldsToken());
  EXPECT_FALSE(p.arbiter.Released());
  p.arbiter.RequestPreempt();
  EXPECT_EQ(p.client.PreemptSeq(), seq);  // preemption names the leased grant
  ASSERT_TRUE(p.client.Release(seq, false).ok());
  EXPECT_TRUE(p.arbiter.Released());
  EXPECT_EQ(p.arbiter.Grant(2, 1), seq + 1);  // the sequence goes on
}

// The client may take a lease and release it before the arbiter has looked: the token word
// still names the previous grant, which the client released long ago. That is not a grant (a
// client that asked again used to be admitted at once on it, beside the arbiter's real holder).
TEST(ChannelTest, ReleasedLeaseIsNotMistakenForTheOlderGrant) {
  Pair p = MakePair();
  const uint32_t g1 = p.arbiter.Grant(0, 1);
  ASSERT_TRUE(p.client.WaitForGrant(1s).ok());
  ASSERT_TRUE(p.client.Release(g1, false).ok());
  const uint32_t lease = p.arbiter.OfferLease(0, 5'000'000, 1);
  ASSERT_TRUE(p.client.TryTakeLease().has_value());
  ASSERT_TRUE(p.client.Release(lease, false).ok());  // before the arbiter adopted it
  EXPECT_FALSE(p.client.HoldsToken());
  ASSERT_TRUE(p.client.RequestToken().ok());
  EXPECT_EQ(p.client.WaitForGrant(20ms).status().code(), StatusCode::kTimeout);
  EXPECT_EQ(p.arbiter.PollLease(), LeaseStatus::kTaken);
  EXPECT_EQ(p.arbiter.AdoptLease(2), lease);
  EXPECT_TRUE(p.arbiter.Released());
  EXPECT_FALSE(p.client.HoldsToken());
  const uint32_t g3 = p.arbiter.Grant(0, 1);
  auto g = p.client.WaitForGrant(1s);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->seq, g3);
  EXPECT_TRUE(SeqNewer(1, kTokenSeqMask));  // across the wrap (0 is skipped)
  EXPECT_FALSE(SeqNewer(5, 5));
  EXPECT_FALSE(SeqNewer(4, 5));
}

TEST(ChannelTest, RevokedLeaseCannotBeTakenAndTheNextGrantIsNormal) {
  Pair p = MakePair();
  const uint32_t seq = p.arbiter.OfferLease(0, 5'000'000, 1);
  EXPECT_EQ(p.arbiter.RevokeLease(), LeaseStatus::kRevoked);
  EXPECT_EQ(p.arbiter.RevokeLease(), LeaseStatus::kNone);
  EXPECT_FALSE(p.client.TryTakeLease().has_value());
  EXPECT_EQ(p.arbiter.Grant(0, 1), seq);
  auto g = p.client.WaitForGrant(1s);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->seq, seq);
}

TEST(ChannelTest, RevocationThatLosesToATakeReportsTaken) {
  Pair p = MakePair();
  const uint32_t seq = p.arbiter.OfferLease(0, 5'000'000, 1);
  ASSERT_TRUE(p.client.TryTakeLease().has_value());
  EXPECT_EQ(p.arbiter.RevokeLease(), LeaseStatus::kTaken);
  EXPECT_EQ(p.arbiter.AdoptLease(2), seq);
  EXPECT_TRUE(p.arbiter.granted());
}

TEST(ChannelTest, ScribbledLeaseWordIsMalformed) {
  Pair p = MakePair();
  const uint32_t seq = p.arbiter.OfferLease(0, 5'000'000, 1);
  StoreRelaxed(&p.client.layout()->lease.word, MakeLease(seq + 7, LeaseState::kTaken));
  EXPECT_EQ(p.arbiter.PollLease(), LeaseStatus::kMalformed);
  EXPECT_EQ(p.arbiter.RevokeLease(), LeaseStatus::kMalformed);
}

// Take against revoke in a loop: every offer ends exactly one way, and the takes the client
// saw are exactly the ones the arbiter adopted (never a grant both sides believe they gave up,
// never one taken twice).
TEST(ChannelTest, LeaseTakeVsRevokeRaceHasExactlyOneWinner) {
  Pair p = MakePair();
  std::atomic<bool> done{false};
  std::vector<uint32_t> client_seqs;
  std::thread client([&] {
    while (!done.load(std::memory_order_relaxed)) {
      if (auto g = p.client.TryTakeLease()) client_seqs.push_back(g->seq);
    }
  });
  std::vector<uint32_t> adopted;
  int revoked = 0;
  constexpr int kRounds = 20000;
  for (int i = 0; i < kRounds; ++i) {
    (void)p.arbiter.OfferLease(0, 5'000'000, 1);
    if (i % 2 == 0) {
      // Give the client a chance (bounded) so both outcomes occur, even on a loaded machine.
      (void)SpinUntil([&] { return p.arbiter.PollLease() == LeaseStatus::kTaken; }, 20'000);
    } else {
      for (int k = i % 256; k > 0; --k) CpuRelax();
    }
    const LeaseStatus s = p.arbiter.RevokeLease();
    if (s == LeaseStatus::kTaken) {
      adopted.push_back(p.arbiter.AdoptLease(2));
    } else {
      ASSERT_EQ(s, LeaseStatus::kRevoked) << "round " << i;
      ++revoked;
    }
    ASSERT_FALSE(p.arbiter.lease_offered());
  }
  done = true;
  client.join();
  EXPECT_EQ(client_seqs, adopted);
  EXPECT_EQ(static_cast<int>(adopted.size()) + revoked, kRounds);
  std::printf("lease race: %zu taken, %d revoked of %d offers\n", adopted.size(), revoked, kRounds);
}

}  // namespace
}  // namespace gshare::shm
