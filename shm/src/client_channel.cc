// ClientChannel: the shim's side of the channel (grant waiting, release, reports).
#include <string>

#include "gshare/shm/channel.h"
#include "gshare/shm/futex.h"
#include "gshare/shm/spin.h"
#include "gshare/shm/wire.h"

namespace gshare::shm {
namespace {

uint64_t Elapsed(uint64_t since) { return MonotonicNowNs() - since; }

// RAII: counts this thread among the futex sleepers of one word while it waits.
class WaiterScope {
 public:
  explicit WaiterScope(uint32_t* counter) : counter_(counter) { FetchAdd(counter_, 1U); }
  ~WaiterScope() { FetchSub(counter_, 1U); }
  WaiterScope(const WaiterScope&) = delete;
  WaiterScope& operator=(const WaiterScope&) = delete;

 private:
  uint32_t* counter_;
};

}  // namespace

Result<ClientChannel> ClientChannel::Attach(UniqueFd channel_fd, UniqueFd doorbell_fd) {
  if (!doorbell_fd) return Status(StatusCode::kInvalidArgument, "no doorbell fd");
  auto segment = ChannelSegment::Attach(std::move(channel_fd));
  if (!segment.ok()) return segment.status();
  ClientChannel c;
  c.segment_ = std::move(segment).value();
  c.doorbell_ = Doorbell(std::move(doorbell_fd));
  return c;
}

GrantInfo ClientChannel::ReadGrant() const {
  const ChannelLayout* l = layout();
  for (;;) {
    GrantInfo g;
    g.token = LoadAcquire(&l->grant.token);
    g.seq = TokenSeq(g.token);
    g.gpu = LoadRelaxed(&l->grant.gpu);
    g.slice_deadline_ns = LoadRelaxed(&l->grant.slice_deadline_ns);
    FenceAcquire();
    if (LoadRelaxed(&l->grant.token) == g.token) return g;
  }
}

bool ClientChannel::HoldsToken() const {
  const uint32_t token = LoadToken();
  return TokenGranted(token) &&
         SeqNewer(TokenSeq(token), LoadRelaxed(&layout()->client_token.released_seq));
}

void ClientChannel::SetState(ClientTokenState state) {
  ChannelLayout* l = layout();
  StoreRelaxed(&l->client_token.state_time_ns, MonotonicNowNs());
  StoreRelease(&l->client_token.state, static_cast<uint32_t>(state));
}

Status ClientChannel::NotifyArbiter() const {
  FenceSeqCst();  // our report stores before the armed check (pairs with ArmDoorbell)
  if (LoadRelaxed(&layout()->control.doorbell_armed) == 0) return {};
  return doorbell_.Ring();
}

Status ClientChannel::RequestToken() {
  SetState(ClientTokenState::kWaiting);
  return NotifyArbiter();
}

Result<GrantInfo> ClientChannel::WaitForGrant(std::chrono::nanoseconds timeout) {
  ChannelLayout* l = layout();
  const uint64_t start = MonotonicNowNs();
  const uint64_t limit = static_cast<uint64_t>(timeout.count() < 0 ? 0 : timeout.count());
  bool spun = false;  // spun for the current hint already (spin once per wake-up)
  for (;;) {
    const uint32_t token = LoadAcquire(&l->grant.token);
    if (TokenGranted(token) && SeqNewer(TokenSeq(token), LoadRelaxed(&l->client_token.released_seq))) {
      SetState(ClientTokenState::kHolding);
      return ReadGrant();
    }
    const uint64_t waited = Elapsed(start);
    if (waited >= limit) return Status(StatusCode::kTimeout, "no grant within the timeout");
    if (!spun && LoadAcquire(&l->control.next_hint) != 0) {
      spun = true;
      uint64_t budget = LoadRelaxed(&l->control.spin_budget_ns);
      if (budget > kMaxSpinBudgetNs) budget = kMaxSpinBudgetNs;
      if (budget > limit - waited) budget = limit - waited;
      (void)SpinUntil(
          [&] { return LoadAcquire(&l->grant.token) != token || LoadRelaxed(&l->control.next_hint) == 0; },
          budget);
      continue;
    }
    // Sleep. The waiter count is published before the final checks of the words (Dekker with
    // ArbiterChannel::Grant and SetNextHint); FUTEX_WAIT re-checks the token in the kernel.
    WaiterScope scope(&l->client_token.token_waiters);
    if (LoadSeqCst(&l->grant.token) != token) continue;
    if (!spun && LoadSeqCst(&l->control.next_hint) != 0) continue;  // hinted meanwhile: spin
    auto r = FutexWait(&l->grant.token, token, std::chrono::nanoseconds(limit - waited));
    if (!r.ok()) return r.status();
    spun = false;  // woken: a new hint may have arrived
  }
}

std::optional<GrantInfo> ClientChannel::TryTakeLease() {
  ChannelLayout* l = layout();
  uint64_t word = LoadAcquire(&l->lease.word);
  if (LeaseStateOf(word) != static_cast<uint32_t>(LeaseState::kOffered)) return std::nullopt;
  const uint32_t seq = LeaseSeq(word);
  if (!CompareExchange(&l->lease.word, &word, MakeLease(seq, LeaseState::kTaken))) return std::nullopt;
  // The CAS read the arbiter's publishing store: the payload of this very offer is visible.
  GrantInfo g;
  g.token = MakeToken(seq, true);
  g.seq = seq;
  g.gpu = LoadRelaxed(&l->lease.gpu);
  const uint64_t now = MonotonicNowNs();
  g.slice_deadline_ns = now + LoadRelaxed(&l->lease.slice_ns);
  StoreRelaxed(&l->client_token.state_time_ns, now);
  StoreRelease(&l->client_token.state, static_cast<uint32_t>(ClientTokenState::kHolding));
  return g;
}

Status ClientChannel::BeginDraining() {
  SetState(ClientTokenState::kDraining);
  return NotifyArbiter();
}

Status ClientChannel::Release(uint32_t seq, bool want_again) {
  ChannelLayout* l = layout();
  StoreRelaxed(&l->client_token.state_time_ns, MonotonicNowNs());
  StoreRelaxed(&l->client_token.state,
               static_cast<uint32_t>(want_again ? ClientTokenState::kWaiting : ClientTokenState::kIdle));
  StoreRelease(&l->client_token.released_seq, seq);
  return NotifyArbiter();
}

Status ClientChannel::ReportBurstStart(uint64_t now_ns, bool notify) {
  BurstLine& b = layout()->burst;
  const uint32_t v = LoadRelaxed(&b.version);
  StoreRelaxed(&b.version, v + 1);
  FenceRelease();
  StoreRelaxed(&b.start_ns, now_ns);
  StoreRelaxed(&b.in_burst, 1U);
  StoreRelaxed(&b.bursts_started, LoadRelaxed(&b.bursts_started) + 1);
  StoreRelease(&b.version, v + 2);
  return notify ? NotifyArbiter() : Status{};
}

Status ClientChannel::ReportBurstEnd(uint64_t now_ns, uint64_t gpu_time_ns) {
  BurstLine& b = layout()->burst;
  const uint32_t v = LoadRelaxed(&b.version);
  StoreRelaxed(&b.version, v + 1);
  FenceRelease();
  StoreRelaxed(&b.end_ns, now_ns);
  StoreRelaxed(&b.gpu_time_ns, gpu_time_ns);
  StoreRelaxed(&b.in_burst, 0U);
  StoreRelease(&b.version, v + 2);
  return NotifyArbiter();
}

SwapOrder ClientChannel::ReadSwapOrder() const {
  const ChannelLayout* l = layout();
  for (;;) {
    SwapOrder o;
    o.seq = LoadAcquire(&l->order.order_seq);
    const uint32_t op = LoadRelaxed(&l->order.op);
    o.op = op < kSwapOpCount ? static_cast<SwapOp>(op) : SwapOp::kNone;
    o.target_gpu = LoadRelaxed(&l->order.target_gpu);
    FenceAcquire();
    if (LoadRelaxed(&l->order.order_seq) == o.seq) return o;
  }
}

Result<SwapOrder> ClientChannel::WaitForSwapOrder(uint32_t last_seen_seq,
                                                  std::chrono::nanoseconds timeout) {
  ChannelLayout* l = layout();
  const uint64_t start = MonotonicNowNs();
  const uint64_t limit = static_cast<uint64_t>(timeout.count() < 0 ? 0 : timeout.count());
  for (;;) {
    if (LoadAcquire(&l->order.order_seq) != last_seen_seq) return ReadSwapOrder();
    const uint64_t waited = Elapsed(start);
    if (waited >= limit) return Status(StatusCode::kTimeout, "no swap order within the timeout");
    WaiterScope scope(&l->client_token.order_waiters);
    if (LoadSeqCst(&l->order.order_seq) != last_seen_seq) continue;
    auto r = FutexWait(&l->order.order_seq, last_seen_seq, std::chrono::nanoseconds(limit - waited));
    if (!r.ok()) return r.status();
  }
}

Status ClientChannel::AckSwap(uint32_t seq, SwapAckStatus status, uint64_t bytes_moved,
                              uint64_t duration_ns, Residency residency, uint32_t resident_gpu,
                              uint64_t resident_bytes) {
  SwapAckLine& a = layout()->ack;
  StoreRelaxed(&a.ack_status, static_cast<uint32_t>(status));
  StoreRelaxed(&a.bytes_moved, bytes_moved);
  StoreRelaxed(&a.duration_ns, duration_ns);
  StoreRelaxed(&a.residency, static_cast<uint32_t>(residency));
  StoreRelaxed(&a.resident_gpu, resident_gpu);
  StoreRelaxed(&a.resident_bytes, resident_bytes);
  StoreRelease(&a.ack_seq, seq);
  return NotifyArbiter();
}

Status ClientChannel::SetResidency(Residency residency, uint32_t resident_gpu,
                                   uint64_t resident_bytes) {
  SwapAckLine& a = layout()->ack;
  StoreRelaxed(&a.resident_gpu, resident_gpu);
  StoreRelaxed(&a.resident_bytes, resident_bytes);
  StoreRelease(&a.residency, static_cast<uint32_t>(residency));
  return NotifyArbiter();
}

Status ClientChannel::RequestSwapIn() {
  FetchAdd(&layout()->ack.swapin_requests, 1U);
  return NotifyArbiter();
}

void ClientChannel::Heartbeat(uint64_t now_ns) {
  StoreRelease(&layout()->heartbeat.heartbeat_ns, now_ns);
}

void ClientChannel::ReportSwapProgress(uint32_t seq, uint64_t bytes) {
  StoreRelaxed(&layout()->heartbeat.progress_bytes, bytes);
  StoreRelease(&layout()->heartbeat.progress_seq, seq);
}

void ClientChannel::BumpGeneration() { FetchAdd(&layout()->heartbeat.generation, 1U); }

}  // namespace gshare::shm
