// ArbiterChannel: the arbiter's writes to a channel and its validated reads of the client's
// lines.
#include <climits>
#include <string>

#include "gshare/shm/channel.h"
#include "gshare/shm/futex.h"
#include "gshare/shm/wire.h"

namespace gshare::shm {
namespace {

constexpr uint64_t kClockSlackNs = 1'000'000'000;    // tolerate 1 s of "future" timestamps
constexpr uint64_t kMaxDurationNs = 3'600'000'000'000ULL;  // one hour
constexpr int kSeqlockTries = 16;

Status Bad(const char* field, const std::string& why) {
  return Status(StatusCode::kMalformed, std::string("client channel field ") + field + " " + why);
}

void WakeIfWaiting(uint32_t* word, const uint32_t* waiters) {
  if (LoadSeqCst(waiters) != 0) (void)FutexWake(word, INT_MAX);
}

}  // namespace

Result<ArbiterChannel> ArbiterChannel::Create(const ChannelInit& init) {
  auto segment = ChannelSegment::Create(init);
  if (!segment.ok()) return segment.status();
  auto doorbell = Doorbell::Create();
  if (!doorbell.ok()) return doorbell.status();
  ArbiterChannel c;
  c.segment_ = std::move(segment).value();
  c.doorbell_ = std::move(doorbell).value();
  c.init_ = init;
  return c;
}

uint32_t ArbiterChannel::Grant(uint32_t gpu, uint64_t slice_deadline_ns) {
  ChannelLayout* l = layout();
  grant_seq_ = (grant_seq_ + 1) & kTokenSeqMask;
  if (grant_seq_ == 0) grant_seq_ = 1;  // 0 means "none" in released_seq / preempt_seq
  granted_ = true;
  StoreRelaxed(&l->grant.gpu, gpu);
  StoreRelaxed(&l->grant.slice_deadline_ns, slice_deadline_ns);
  StoreRelaxed(&l->grant.grant_time_ns, MonotonicNowNs());
  StoreRelaxed(&l->control.preempt_seq, 0U);
  StoreSeqCst(&l->grant.token, MakeToken(grant_seq_, true));
  StoreRelaxed(&l->control.next_hint, 0U);  // after the token: a spinner sees the grant first
  WakeIfWaiting(&l->grant.token, &l->client_token.token_waiters);
  return grant_seq_;
}

void ArbiterChannel::Revoke() {
  ChannelLayout* l = layout();
  granted_ = false;
  StoreSeqCst(&l->grant.token, MakeToken(grant_seq_, false));
  WakeIfWaiting(&l->grant.token, &l->client_token.token_waiters);
}

void ArbiterChannel::SetNextHint(bool next, uint32_t spin_budget_ns) {
  ChannelLayout* l = layout();
  StoreRelaxed(&l->control.spin_budget_ns, spin_budget_ns);
  StoreSeqCst(&l->control.next_hint, next ? 1U : 0U);
  // A client already asleep in the futex must wake up to start spinning. This wake-up costs a
  // system call now, while the holder still drains, instead of later on the handoff path.
  if (next) WakeIfWaiting(&l->grant.token, &l->client_token.token_waiters);
}

uint32_t ArbiterChannel::OfferLease(uint32_t gpu, uint64_t slice_ns, uint64_t now_ns) {
  ChannelLayout* l = layout();
  uint32_t seq = (grant_seq_ + 1) & kTokenSeqMask;
  if (seq == 0) seq = 1;
  lease_seq_ = seq;
  lease_gpu_ = gpu;
  lease_offered_ = true;
  StoreRelaxed(&l->lease.gpu, gpu);
  StoreRelaxed(&l->lease.slice_ns, slice_ns);
  StoreRelaxed(&l->lease.offered_ns, now_ns);
  StoreSeqCst(&l->lease.word, MakeLease(seq, LeaseState::kOffered));
  return seq;
}

LeaseStatus ArbiterChannel::PollLease() const {
  if (!lease_offered_) return LeaseStatus::kNone;
  const uint64_t word = LoadAcquire(&layout()->lease.word);
  if (word == MakeLease(lease_seq_, LeaseState::kOffered)) return LeaseStatus::kOffered;
  if (word == MakeLease(lease_seq_, LeaseState::kTaken)) return LeaseStatus::kTaken;
  return LeaseStatus::kMalformed;
}

LeaseStatus ArbiterChannel::RevokeLease() {
  if (!lease_offered_) return LeaseStatus::kNone;
  uint64_t expected = MakeLease(lease_seq_, LeaseState::kOffered);
  if (CompareExchange(&layout()->lease.word, &expected, MakeLease(lease_seq_, LeaseState::kRevoked))) {
    lease_offered_ = false;
    return LeaseStatus::kRevoked;
  }
  if (expected == MakeLease(lease_seq_, LeaseState::kTaken)) return LeaseStatus::kTaken;
  return LeaseStatus::kMalformed;
}

uint32_t ArbiterChannel::AdoptLease(uint64_t slice_deadline_ns) {
  ChannelLayout* l = layout();
  lease_offered_ = false;
  grant_seq_ = lease_seq_;
  granted_ = true;
  // The client reads its grant from the lease line; the grant line is brought up to date so
  // that both sides name the same grant in preemptions and releases.
  StoreRelaxed(&l->grant.gpu, lease_gpu_);
  StoreRelaxed(&l->grant.slice_deadline_ns, slice_deadline_ns);
  StoreRelaxed(&l->grant.grant_time_ns, MonotonicNowNs());
  StoreRelaxed(&l->control.preempt_seq, 0U);
  StoreSeqCst(&l->grant.token, MakeToken(grant_seq_, true));
  StoreRelaxed(&l->control.next_hint, 0U);
  return grant_seq_;
}

void ArbiterChannel::RequestPreempt() {
  if (granted_) StoreRelease(&layout()->control.preempt_seq, grant_seq_);
}

uint32_t ArbiterChannel::IssueSwapOrder(SwapOp op, uint32_t target_gpu, uint64_t now_ns) {
  ChannelLayout* l = layout();
  order_seq_ = order_seq_ + 1 == 0 ? 1 : order_seq_ + 1;
  StoreRelaxed(&l->order.op, static_cast<uint32_t>(op));
  StoreRelaxed(&l->order.target_gpu, target_gpu);
  StoreRelaxed(&l->order.issued_ns, now_ns);
  StoreSeqCst(&l->order.order_seq, order_seq_);
  WakeIfWaiting(&l->order.order_seq, &l->client_token.order_waiters);
  return order_seq_;
}

void ArbiterChannel::ArmDoorbell() {
  StoreSeqCst(&layout()->control.doorbell_armed, 1U);
  FenceSeqCst();  // the client's reports written before its check are visible to our re-read
}

void ArbiterChannel::DisarmDoorbell() { StoreRelaxed(&layout()->control.doorbell_armed, 0U); }

bool ArbiterChannel::Released() const {
  return granted_ && LoadAcquire(&layout()->client_token.released_seq) == grant_seq_;
}

SwapProgress ArbiterChannel::ReadSwapProgress() const {
  SwapProgress p;
  p.seq = LoadAcquire(&layout()->heartbeat.progress_seq);
  p.bytes = LoadRelaxed(&layout()->heartbeat.progress_bytes);
  return p;
}

Result<ClientView> ArbiterChannel::ReadClient(uint64_t now_ns) const {
  const ChannelLayout* l = layout();
  ClientView v;
  const uint64_t future = now_ns + kClockSlackNs;

  const uint32_t state = LoadAcquire(&l->client_token.state);
  if (state >= kClientTokenStateCount) return Bad("state", "has unknown value " + std::to_string(state));
  v.state = static_cast<ClientTokenState>(state);
  v.released = Released();

  // Burst report: seqlock, bounded retries (a stuck or malicious writer cannot hang us).
  bool consistent = false;
  for (int i = 0; i < kSeqlockTries && !consistent; ++i) {
    const uint32_t v1 = LoadAcquire(&l->burst.version);
    if ((v1 & 1U) != 0) { CpuRelax(); continue; }
    const uint32_t in_burst_raw = LoadRelaxed(&l->burst.in_burst);
    v.in_burst = in_burst_raw != 0;
    v.bursts_started = LoadRelaxed(&l->burst.bursts_started);
    v.burst_start_ns = LoadRelaxed(&l->burst.start_ns);
    v.burst_end_ns = LoadRelaxed(&l->burst.end_ns);
    v.burst_gpu_time_ns = LoadRelaxed(&l->burst.gpu_time_ns);
    FenceAcquire();
    consistent = LoadRelaxed(&l->burst.version) == v1;
    if (consistent && in_burst_raw > 1) return Bad("burst.in_burst", "is neither 0 nor 1");
  }
  if (!consistent) {
    // A writer descheduled inside its write section looks the same as a hostile one for a
    // moment: report "busy" and let the caller decide how long is too long.
    return Status(StatusCode::kTimeout,
                  "client channel field burst.version is being written (odd or changing)");
  }
  if (v.burst_start_ns > future) return Bad("burst.start_ns", "lies in the future");
  if (v.burst_end_ns > future) return Bad("burst.end_ns", "lies in the future");
  if (!v.in_burst && v.bursts_started != 0) {
    if (v.burst_end_ns < v.burst_start_ns) return Bad("burst.end_ns", "precedes start_ns");
    if (v.burst_gpu_time_ns > v.burst_end_ns - v.burst_start_ns) {
      return Bad("burst.gpu_time_ns", "exceeds the burst's duration");
    }
  }

  // Swap acknowledgement: ack_seq is published last.
  v.ack_seq = LoadAcquire(&l->ack.ack_seq);
  const uint32_t ack_status = LoadRelaxed(&l->ack.ack_status);
  if (ack_status > 1) return Bad("ack.ack_status", "has unknown value");
  v.ack_status = static_cast<SwapAckStatus>(ack_status);
  v.ack_bytes_moved = LoadRelaxed(&l->ack.bytes_moved);
  v.ack_duration_ns = LoadRelaxed(&l->ack.duration_ns);
  if (v.ack_seq > order_seq_) {
    return Bad("ack.ack_seq", "acknowledges an order that was never issued");
  }
  const uint64_t max_bytes = init_.quota_bytes + kResidentSlackBytes;
  if (v.ack_bytes_moved > max_bytes) return Bad("ack.bytes_moved", "exceeds the quota");
  if (v.ack_duration_ns > kMaxDurationNs) return Bad("ack.duration_ns", "is absurd");
  const uint32_t residency = LoadRelaxed(&l->ack.residency);
  if (residency >= kResidencyCount) return Bad("ack.residency", "has unknown value");
  v.residency = static_cast<Residency>(residency);
  v.resident_gpu = LoadRelaxed(&l->ack.resident_gpu);
  if (v.resident_gpu != kNoGpu && v.resident_gpu >= kMaxGpus) return Bad("ack.resident_gpu", "out of range");
  v.resident_bytes = LoadRelaxed(&l->ack.resident_bytes);
  if (v.resident_bytes > max_bytes) return Bad("ack.resident_bytes", "exceeds the quota");
  v.swapin_requests = LoadRelaxed(&l->ack.swapin_requests);

  v.heartbeat_ns = LoadRelaxed(&l->heartbeat.heartbeat_ns);
  if (v.heartbeat_ns > future) return Bad("heartbeat.heartbeat_ns", "lies in the future");
  v.generation = LoadRelaxed(&l->heartbeat.generation);
  return v;
}

}  // namespace gshare::shm
