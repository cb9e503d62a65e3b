// The channel: one sealed memfd per client holding a ChannelLayout (channel_layout.h), plus
// the client's doorbell eventfd. Two views with disjoint write sets:
//
//  ArbiterChannel - the arbiter's side. Creates the segment and the doorbell, grants, revokes,
//    hints, preempts, orders swaps, arms the doorbell; reads the client's lines only through
//    ReadClient(), which validates every field (the client may write anything). Its own state
//    (current grant, order sequence) is kept in the object, never read back from shared memory.
//    Thread-safety: one arbiter thread per channel (the event loop).
//    Offers the sole-tenant lease and revokes it (LeaseLine: the only word both sides CAS).
//
//  ClientChannel - the shim's side. Waits for grants (bounded spinning when told it is next,
//    then futex), releases, reports bursts, acknowledges swap orders, rings the doorbell only
//    when the arbiter is asleep. Trusts the arbiter. Thread-safety: LoadToken, ReadGrant,
//    HoldsToken, PreemptSeq, ReadSwapOrder, WaitForGrant, WaitForSwapOrder, RequestSwapIn,
//    Heartbeat, ReportSwapProgress and NotifyArbiter may be called from any thread
//    concurrently. The reporting methods (TryTakeLease, RequestToken, BeginDraining, Release,
//    ReportBurst*, AckSwap, SetResidency, BumpGeneration) REQUIRE one caller at a time: the
//    shim serialises its token protocol.
//    After fork() the child must not use the parent's ClientChannel (it would write into the
//    parent's channel): destroy it (that writes nothing) and register anew.
//
// Both own their mapping and fds (RAII); moving is allowed, copying is not.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "gshare/shm/atomic_word.h"
#include "gshare/shm/channel_layout.h"
#include "gshare/shm/doorbell.h"
#include "gshare/shm/futex.h"
#include "gshare/shm/mapping.h"
#include "gshare/shm/status.h"
#include "gshare/shm/unique_fd.h"

namespace gshare::shm {

// The largest spin the client honours, whatever the arbiter asks.
inline constexpr uint32_t kMaxSpinBudgetNs = 1'000'000;

struct ChannelInit {
  uint32_t client_id = 0;       // non-zero
  uint32_t gpu = 0;
  uint64_t arbiter_epoch = 0;   // non-zero
  uint64_t quota_bytes = 0;     // non-zero
  uint64_t slice_ns = 20'000'000;
  uint32_t slo_ms = 0;
};

struct SwapProgress {
  uint32_t seq = 0;    // the order the report is about
  uint64_t bytes = 0;  // bytes it had moved
};

struct GrantInfo {
  uint32_t token = 0;  // the raw token word: compare it with LoadToken() for a 1-load check
  uint32_t seq = 0;
  uint32_t gpu = 0;
  uint64_t slice_deadline_ns = 0;
};

struct SwapOrder {
  uint32_t seq = 0;  // 0: no order yet
  SwapOp op = SwapOp::kNone;
  uint32_t target_gpu = 0;
};

// The arbiter's view of the lease it offered (ArbiterChannel::PollLease / RevokeLease).
enum class LeaseStatus {
  kNone,       // no offer outstanding
  kOffered,    // offered and not taken yet
  kRevoked,    // RevokeLease withdrew it before a take
  kTaken,      // the client took it: call AdoptLease (it holds the grant since the take)
  kMalformed,  // the word holds a value neither side may write: a misbehaving client
};

// What the arbiter learns from a client's lines, every field validated.
struct ClientView {
  ClientTokenState state = ClientTokenState::kIdle;
  bool released = false;  // the client released the arbiter's current grant
  bool in_burst = false;
  uint32_t bursts_started = 0;
  uint64_t burst_start_ns = 0;
  uint64_t burst_end_ns = 0;
  uint64_t burst_gpu_time_ns = 0;
  uint32_t ack_seq = 0;
  SwapAckStatus ack_status = SwapAckStatus::kOk;
  uint64_t ack_bytes_moved = 0;
  uint64_t ack_duration_ns = 0;
  Residency residency = Residency::kResident;
  uint32_t resident_gpu = 0;  // kNoGpu when not resident
  uint64_t resident_bytes = 0;
  uint32_t swapin_requests = 0;
  uint64_t heartbeat_ns = 0;
  uint32_t generation = 0;
};

// Owns one mapped channel segment.
class ChannelSegment {
 public:
  ChannelSegment() = default;
  // Arbiter: creates, initialises and seals a new segment.
  static Result<ChannelSegment> Create(const ChannelInit& init);
  // Client: checks size, seals, magic and ABI version (kVersionMismatch with a clear message),
  // then maps the segment read-write. Takes ownership of `fd`.
  static Result<ChannelSegment> Attach(UniqueFd fd);

  ChannelLayout* layout() const { return static_cast<ChannelLayout*>(mapping_.data()); }
  int fd() const { return fd_.get(); }
  // Closes the memfd (the mapping stays). The arbiter does this once the fd was passed, so the
  // segment is no longer reachable through its fd table.
  void CloseFd() { fd_.Reset(); }

 private:
  UniqueFd fd_;
  Mapping mapping_;
};

class ArbiterChannel {
 public:
  ArbiterChannel() = default;
  // Creates the segment and the doorbell for a new client.
  static Result<ArbiterChannel> Create(const ChannelInit& init);

  int channel_fd() const { return segment_.fd(); }  // to pass with SCM_RIGHTS
  int doorbell_fd() const { return doorbell_.fd(); }  // to pass, and to add to epoll
  void CloseChannelFd() { segment_.CloseFd(); }
  const ChannelInit& init() const { return init_; }

  // Grants the token for `gpu` until `deadline_ns`; wakes the client if it sleeps. Clears the
  // next hint and any preemption request. Returns the grant's sequence number.
  uint32_t Grant(uint32_t gpu, uint64_t slice_deadline_ns);
  // Withdraws the current grant (e.g. after enforcement); wakes sleepers.
  void Revoke();
  bool granted() const { return granted_; }
  uint32_t grant_seq() const { return grant_seq_; }
  // Tells the client it is next in line and may spin up to `spin_budget_ns` for the grant;
  // wakes it if it sleeps so it starts spinning (give the hint while the holder drains).
  void SetNextHint(bool next, uint32_t spin_budget_ns);
  // Asks the client to release the current grant as soon as it can.
  void RequestPreempt();

  // The lease (docs/protocol.md, "The lease"): a grant offered in advance to a sole tenant
  // that released at the end of a burst, which its next acquisition takes with one CAS and no
  // round trip. REQUIRES for OfferLease: no lease outstanding, and the client holds no grant.
  // Returns the offered sequence (the one the next Grant would use).
  uint32_t OfferLease(uint32_t gpu, uint64_t slice_ns, uint64_t now_ns);
  // Looks at the outstanding offer without changing it: kNone, kOffered, kTaken or kMalformed.
  LeaseStatus PollLease() const;
  // Withdraws the outstanding offer with a CAS: kNone (none outstanding), kRevoked, or - the
  // client won the race - kTaken (call AdoptLease) or kMalformed.
  LeaseStatus RevokeLease();
  // Turns the taken lease into the current grant (sequence, granted, `slice_deadline_ns`)
  // exactly as Grant() would have issued it, without waking anyone. REQUIRES: PollLease() or
  // RevokeLease() returned kTaken. Returns the grant's sequence.
  uint32_t AdoptLease(uint64_t slice_deadline_ns);
  bool lease_offered() const { return lease_offered_; }
  uint32_t lease_seq() const { return lease_seq_; }
  // Publishes a swap order and wakes a client thread waiting for orders. Returns its sequence.
  uint32_t IssueSwapOrder(SwapOp op, uint32_t target_gpu, uint64_t now_ns);
  uint32_t order_seq() const { return order_seq_; }
  // Arm before sleeping (then re-read every channel before epoll_wait); disarm on waking.
  void ArmDoorbell();
  void DisarmDoorbell();
  // Clears the doorbell counter after epoll reported it readable.
  Result<uint64_t> DrainDoorbell() const { return doorbell_.Drain(); }

  // Snapshot of the client's lines, validated against the arbiter's own knowledge. `now_ns` is
  // the arbiter's clock, used to bound timestamps. kMalformed names the first invalid field:
  // the arbiter should treat the client as misbehaving (disconnect it). kTimeout: the client was
  // inside a write of its burst report (seqlock odd or changing over a few retries); read again
  // later, and treat it as misbehaving only if that lasts (a descheduled honest writer finishes).
  Result<ClientView> ReadClient(uint64_t now_ns) const;
  // Cheap check for the handoff path: has the client released the current grant?
  bool Released() const;
  // The client's last swap-progress report (ClientChannel::ReportSwapProgress): unvalidated
  // (the client may write anything), to be used only as a hint that an order is progressing.
  SwapProgress ReadSwapProgress() const;

  // For tests and tools: the raw layout. Do not read arbiter-written fields back as truth.
  ChannelLayout* layout() const { return segment_.layout(); }

 private:
  ChannelSegment segment_;
  Doorbell doorbell_;
  ChannelInit init_;
  uint32_t grant_seq_ = 0;
  bool granted_ = false;
  uint32_t order_seq_ = 0;
  bool lease_offered_ = false;  // an offer is outstanding (or taken and not adopted yet)
  uint32_t lease_seq_ = 0;
  uint32_t lease_gpu_ = 0;
};

class ClientChannel {
 public:
  ClientChannel() = default;
  // Attaches to the fds received at registration (takes ownership of both).
  static Result<ClientChannel> Attach(UniqueFd channel_fd, UniqueFd doorbell_fd);

  const ChannelHeader& header() const { return segment_.layout()->header; }

  // The fast path: one acquire load of the token word. The shim compares it with the token of
  // the grant it holds (GrantInfo::token).
  uint32_t LoadToken() const { return LoadAcquire(&segment_.layout()->grant.token); }
  // The current grant, read consistently. held == granted and not yet released by us.
  GrantInfo ReadGrant() const;
  bool HoldsToken() const;

  // Says the client wants the token (state kWaiting) and wakes the arbiter if it sleeps.
  Status RequestToken();
  // Waits until the client holds a grant it has not released: spins while the arbiter's
  // next hint is set (bounded by the hint's budget and kMaxSpinBudgetNs), otherwise sleeps in
  // FUTEX_WAIT. Marks the state kHolding on success. kTimeout after `timeout`.
  Result<GrantInfo> WaitForGrant(std::chrono::nanoseconds timeout);
  // Takes the lease the arbiter left, if any, with one CAS: on success the client holds that
  // grant at once (state kHolding) and no system call was made - the doorbell is NOT rung:
  // call NotifyArbiter() later, off the critical path. nullopt: no lease (request the token).
  // REQUIRES: the client holds no grant.
  std::optional<GrantInfo> TryTakeLease();
  // Announces that the client will release soon and is draining its work (the arbiter may
  // start spinning for the release and tell the next client to spin).
  Status BeginDraining();
  // Releases grant `seq`; `want_again` leaves the client waiting for the next grant.
  Status Release(uint32_t seq, bool want_again);
  // The grant sequence the arbiter asks us to release (compare with the held one); 0: none.
  uint32_t PreemptSeq() const { return LoadAcquire(&segment_.layout()->control.preempt_seq); }

  // `notify`: ring the doorbell if the arbiter sleeps (false on the lease path, which rings
  // later from the service thread).
  Status ReportBurstStart(uint64_t now_ns, bool notify = true);
  Status ReportBurstEnd(uint64_t now_ns, uint64_t gpu_time_ns);

  SwapOrder ReadSwapOrder() const;
  // Waits until an order with a sequence other than `last_seen_seq` is published.
  Result<SwapOrder> WaitForSwapOrder(uint32_t last_seen_seq, std::chrono::nanoseconds timeout);
  // Acknowledges order `seq` and states the residency reached.
  Status AckSwap(uint32_t seq, SwapAckStatus status, uint64_t bytes_moved, uint64_t duration_ns,
                 Residency residency, uint32_t resident_gpu, uint64_t resident_bytes);
  // Updates the residency without an order (e.g. while a swap is in progress).
  Status SetResidency(Residency residency, uint32_t resident_gpu, uint64_t resident_bytes);
  // Asks to be made resident now (a submission arrived while swapped out).
  Status RequestSwapIn();

  void Heartbeat(uint64_t now_ns);
  // States that swap order `seq` has moved `bytes` so far (a liveness hint: the arbiter gives
  // an order that keeps progressing more time). Any thread; does not ring the doorbell.
  void ReportSwapProgress(uint32_t seq, uint64_t bytes);
  // Bumps the generation (call after re-initialising, e.g. in a fork child that re-registers).
  void BumpGeneration();

  // Rings the doorbell iff the arbiter armed it. Called by every reporting method above.
  Status NotifyArbiter() const;

  ChannelLayout* layout() const { return segment_.layout(); }

 private:
  void SetState(ClientTokenState state);

  ChannelSegment segment_;
  Doorbell doorbell_;
};

}  // namespace gshare::shm
