// Memory layout of a client's channel: the shared-memory segment (one memfd per client,
// mapped by the arbiter and by that client only) through which grants, preemption requests,
// swap orders and the client's reports flow. Specified in docs/protocol.md ("The channel").
//
// INVARIANTS
//  1. Every 64-byte line has exactly one writer: the arbiter (A) or the client (C), as marked.
//     Nobody ever writes a line it does not own. Lines are cache-line separated. The one
//     exception is LeaseLine::word (A+C): both sides change it only by compare-and-swap, and
//     its other fields are written by the arbiter only, before it publishes an offer.
//  2. Fields another process reads concurrently are accessed only through atomic_word.h.
//  3. The arbiter never trusts anything in the segment: it keeps its own copy of what it wrote
//     (a client may scribble over arbiter lines; that only confuses its own shim) and validates
//     every client field it reads (ArbiterChannel::ReadClient).
//  4. Multi-word values are published by a final release store of a sequence/version word
//     after the payload (grant: `token`; swap order: `order_seq`; swap ack: `ack_seq`); the
//     burst report is a single-writer seqlock (`version` odd while being written).
//  5. LeaseLine::word is a naturally aligned 64-bit word (lock-free CAS).
//  6. Futex words are 32-bit and 4-byte aligned: GrantLine::token, SwapOrderLine::order_seq.
//     A waker issues FUTEX_WAKE only when the waiter count the other side publishes is
//     non-zero (Dekker pattern with seq_cst on both sides), so a grant costs no system call
//     when nobody sleeps.
//  7. The segment is sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) before the fd leaves
//     the arbiter, so a client cannot truncate it under the arbiter's mapping (SIGBUS).
//  8. All times are CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gshare::shm {

inline constexpr uint64_t kChannelMagic = 0x314E484352485347ULL;  // "GSHRCHN1" (little-endian)
inline constexpr uint32_t kChannelAbiVersion = 3;  // 2: the lease line; 3: swap progress
inline constexpr size_t kCacheLine = 64;
inline constexpr size_t kChannelSegmentSize = 4096;  // one page; layout uses the first 576 bytes

// GrantLine::token = (sequence << 1) | granted. The sequence counts grants to this client
// (31 bits, wraps); granted == 0 means revoked / none.
inline constexpr uint32_t kTokenGranted = 1;
inline constexpr uint32_t MakeToken(uint32_t seq, bool granted) {
  return (seq << 1) | (granted ? kTokenGranted : 0U);
}
inline constexpr uint32_t TokenSeq(uint32_t token) { return token >> 1; }
inline constexpr bool TokenGranted(uint32_t token) { return (token & kTokenGranted) != 0; }
inline constexpr uint32_t kTokenSeqMask = 0x7FFFFFFF;
// Whether grant sequence `a` was issued after `b` (31-bit sequences that wrap; 0 = none is
// older than everything). The client holds the token word's grant only if it is newer than the
// one it released last: with a lease the client can release grant S before the arbiter has
// adopted it, while the token word still names S - 1 (already released) - not a grant.
inline constexpr bool SeqNewer(uint32_t a, uint32_t b) {
  const uint32_t d = (a - b) & kTokenSeqMask;
  return d != 0 && d < (1U << 30);
}

enum class ClientTokenState : uint32_t {
  kIdle = 0,      // does not want the token
  kWaiting = 1,   // wants the token
  kHolding = 2,   // holds it and is submitting work
  kDraining = 3,  // decided to release; draining its in-flight work (release follows soon)
};
inline constexpr uint32_t kClientTokenStateCount = 4;

// LeaseLine::word = (sequence << 32) | LeaseState. The sequence is the grant sequence the
// arbiter pre-issues with the offer (the next one after its last grant).
enum class LeaseState : uint32_t {
  kNone = 0,     // nothing offered
  kOffered = 1,  // the arbiter offers grant `sequence`: the client may take it with one CAS
  kTaken = 2,    // the client took it (CAS kOffered -> kTaken): it holds grant `sequence`
  kRevoked = 3,  // the arbiter withdrew the offer (CAS kOffered -> kRevoked) before a take
};
inline constexpr uint32_t kLeaseStateCount = 4;
inline constexpr uint64_t MakeLease(uint32_t seq, LeaseState state) {
  return (uint64_t{seq} << 32) | static_cast<uint32_t>(state);
}
inline constexpr uint32_t LeaseSeq(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
inline constexpr uint32_t LeaseStateOf(uint64_t word) { return static_cast<uint32_t>(word); }

enum class SwapOp : uint32_t { kNone = 0, kSwapOut = 1, kSwapIn = 2 };
inline constexpr uint32_t kSwapOpCount = 3;

enum class Residency : uint32_t { kResident = 0, kSwappingOut = 1, kSwappedOut = 2, kSwappingIn = 3 };
inline constexpr uint32_t kResidencyCount = 4;

enum class SwapAckStatus : uint32_t { kOk = 0, kFailed = 1 };

// Line 0 (A, written once before the fd is passed; immutable afterwards).
struct alignas(kCacheLine) ChannelHeader {
  uint64_t magic;          // kChannelMagic
  uint32_t abi_version;    // kChannelAbiVersion
  uint32_t layout_size;    // sizeof(ChannelLayout)
  uint32_t client_id;      // as in the registration reply
  uint32_t gpu;            // GPU assigned at registration
  uint64_t arbiter_epoch;  // as in the registration reply
  uint64_t quota_bytes;    // granted vGPU quota
  uint64_t slice_ns;       // default slice length
  uint32_t slo_ms;         // the function's SLO
  uint32_t reserved0;
  uint64_t reserved1;
};

// Line 1 (A): the grant.
struct alignas(kCacheLine) GrantLine {
  uint32_t token;              // futex word; MakeToken(seq, granted); published last
  uint32_t gpu;                // GPU the grant is for
  uint64_t slice_deadline_ns;  // release by then if someone waits
  uint64_t grant_time_ns;      // when the arbiter granted
};

// Line 2 (A): hints and requests to the client.
struct alignas(kCacheLine) ControlLine {
  uint32_t next_hint;        // 1: "you are next": spin for the grant instead of sleeping
  uint32_t spin_budget_ns;   // how long to spin when next_hint is set (client caps it)
  uint32_t preempt_seq;      // grant sequence the arbiter asks the client to release; 0: none
  uint32_t doorbell_armed;   // 1: the arbiter sleeps; ring the doorbell after writing a report
};

// Line 3 (A): swap order.
struct alignas(kCacheLine) SwapOrderLine {
  uint32_t order_seq;   // futex word; counts orders; published last
  uint32_t op;          // SwapOp
  uint32_t target_gpu;  // for kSwapIn: the GPU to become resident on
  uint32_t reserved;
  uint64_t issued_ns;
};

// Line 4 (C): token state.
struct alignas(kCacheLine) ClientTokenLine {
  uint32_t state;          // ClientTokenState
  uint32_t released_seq;   // sequence of the last grant the client released
  uint32_t token_waiters;  // client threads asleep in FUTEX_WAIT on GrantLine::token
  uint32_t order_waiters;  // client threads asleep in FUTEX_WAIT on SwapOrderLine::order_seq
  uint64_t state_time_ns;  // when `state` last changed
};

// Line 5 (C): burst report, a single-writer seqlock.
struct alignas(kCacheLine) BurstLine {
  uint32_t version;         // odd while the client is writing
  uint32_t in_burst;        // 1 between a burst start and its end
  uint32_t bursts_started;  // counts burst starts
  uint32_t reserved;
  uint64_t start_ns;        // start of the current/last burst
  uint64_t end_ns;          // end of the last finished burst
  uint64_t gpu_time_ns;     // GPU time the last finished burst used
};

// Line 6 (C): swap acknowledgement and residency.
struct alignas(kCacheLine) SwapAckLine {
  uint32_t ack_seq;         // order_seq acknowledged; published last
  uint32_t ack_status;      // SwapAckStatus
  uint32_t residency;       // Residency
  uint32_t resident_gpu;    // GPU it is resident on, or kNoGpu
  uint64_t bytes_moved;     // by the acknowledged order
  uint64_t duration_ns;     // time the acknowledged order took
  uint64_t resident_bytes;  // device bytes it holds now
  uint32_t swapin_requests; // counter: +1 each time it needs to be resident now
  uint32_t reserved;
};

// Line 7 (C): liveness and identity.
struct alignas(kCacheLine) HeartbeatLine {
  uint64_t heartbeat_ns;  // client's last sign of life
  uint32_t generation;    // +1 on every (re)initialisation of the client's side
  // Progress of the swap order being carried out (a liveness hint, never trusted as a value):
  // the order's sequence and the bytes it has moved so far, rewritten as copies complete.
  uint32_t progress_seq;
  uint64_t progress_bytes;
};

// Line 8 (A+C, `word` by CAS only): the sole tenant's lease, a grant offered in advance. The
// arbiter writes gpu, slice_ns and offered_ns, then publishes `word` = MakeLease(seq, kOffered)
// (seq_cst); it never writes the line again while the offer stands or is taken. The client
// takes it with CAS(kOffered -> kTaken) and then reads the payload (the CAS synchronises with
// the publishing store). The arbiter withdraws it with CAS(kOffered -> kRevoked); if that CAS
// fails because the word says kTaken with the same sequence, the client holds that grant.
struct alignas(kCacheLine) LeaseLine {
  uint64_t word;         // MakeLease(seq, state)
  uint32_t gpu;          // GPU the offered grant is for
  uint32_t reserved;
  uint64_t slice_ns;     // the grant's slice, counted from the take
  uint64_t offered_ns;   // when the arbiter offered it
};

struct ChannelLayout {
  ChannelHeader header;
  GrantLine grant;
  ControlLine control;
  SwapOrderLine order;
  ClientTokenLine client_token;
  BurstLine burst;
  SwapAckLine ack;
  HeartbeatLine heartbeat;
  LeaseLine lease;
};

static_assert(std::is_standard_layout_v<ChannelLayout>);
static_assert(std::is_trivially_copyable_v<ChannelLayout>);
static_assert(sizeof(ChannelHeader) == kCacheLine);
static_assert(sizeof(GrantLine) == kCacheLine);
static_assert(sizeof(ControlLine) == kCacheLine);
static_assert(sizeof(SwapOrderLine) == kCacheLine);
static_assert(sizeof(ClientTokenLine) == kCacheLine);
static_assert(sizeof(BurstLine) == kCacheLine);
static_assert(sizeof(SwapAckLine) == kCacheLine);
static_assert(sizeof(HeartbeatLine) == kCacheLine);
static_assert(sizeof(LeaseLine) == kCacheLine);
static_assert(sizeof(ChannelLayout) == 9 * kCacheLine);
static_assert(alignof(ChannelLayout) == kCacheLine);
static_assert(sizeof(ChannelLayout) <= kChannelSegmentSize);
static_assert(offsetof(ChannelLayout, header) == 0);
static_assert(offsetof(ChannelLayout, grant) == 64);
static_assert(offsetof(ChannelLayout, control) == 128);
static_assert(offsetof(ChannelLayout, order) == 192);
static_assert(offsetof(ChannelLayout, client_token) == 256);
static_assert(offsetof(ChannelLayout, burst) == 320);
static_assert(offsetof(ChannelLayout, ack) == 384);
static_assert(offsetof(ChannelLayout, heartbeat) == 448);
static_assert(offsetof(ChannelLayout, lease) == 512);
static_assert(offsetof(LeaseLine, word) == 0 && offsetof(LeaseLine, gpu) == 8 &&
              offsetof(LeaseLine, slice_ns) == 16 && offsetof(LeaseLine, offered_ns) == 24);
static_assert(offsetof(GrantLine, token) == 0 && offsetof(GrantLine, slice_deadline_ns) == 8);
static_assert(offsetof(SwapOrderLine, order_seq) == 0 && offsetof(SwapOrderLine, issued_ns) == 16);
static_assert(offsetof(BurstLine, start_ns) == 16 && offsetof(BurstLine, gpu_time_ns) == 32);
static_assert(offsetof(SwapAckLine, bytes_moved) == 16 && offsetof(SwapAckLine, swapin_requests) == 40);
static_assert(offsetof(ChannelHeader, arbiter_epoch) == 24 && offsetof(ChannelHeader, slo_ms) == 48);

}  // namespace gshare::shm
