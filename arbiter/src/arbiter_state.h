// The arbiter's state as plain types, shared by ArbiterImpl (arbiter_impl.h) and the read-only
// views of it (status_views.h): a client (Client, with its ClientSession and SwapOrders), an
// orphan reservation (Orphan), a GPU's token holders and drain mark (GpuState), why a client
// left (Unregister), and the conversions between the arbiter's GPU indices and the policy's and
// wire's numbers.
//
// Thread-safety: plain values, owned and used by the arbiter's loop thread only.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client_session.h"
#include "corun.h"
#include "corun_judge.h"
#include "deadline_queue.h"
#include "device_view.h"
#include "doorbell_guard.h"
#include "gpu_ids.h"
#include "gshare/policy/policy.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/registration.h"
#include "lease_book.h"
#include "swap_orders.h"
#include "telemetry.h"

namespace gshare::arbiter {

// The event ring's and the wire's "no GPU" (shm::kNoGpu), as an ordinal.
inline constexpr DeviceOrdinal kNoOrdinal{shm::kNoGpu};

// The policy's GpuId is the arbiter's GpuIndex: PolicyConfig::gpus is built from gpus_ in order.
inline policy::GpuId ToPolicy(GpuIndex g) { return g.value(); }
inline GpuIndex FromPolicy(policy::GpuId g) { return GpuIndex{g}; }

// Why a client was removed: the kUnregister event's argument (shm/event_ring_layout.h), so the
// values are part of the event ring's format.
enum class Unregister : uint64_t {
  kClean = 0,          // said goodbye / closed its connection
  kDied = 1,           // its process exited (or the connection broke)
  kMalformed = 2,      // wrote what nobody may write in its channel or lease word
  kOrderTimeout = 3,   // stopped acknowledging swap orders
  kUnenforceable = 4,  // ignored preemption and its checkpoint failed
  kFlooding = 5,       // rang its doorbell over the rate too long
};
// The reasons for which the arbiter disconnects a live process (its memory may stay: an orphan).
inline bool DisconnectedAlive(Unregister r) { return r >= Unregister::kMalformed; }
// The name in logs, the orphans' status and metrics ("clean", "malformed_channel", ...).
const char* UnregisterName(Unregister r);

// Why an MPS client's swap-out or move is refused (RefusePinned; gshare-ctl evict's error).
inline constexpr std::string_view kMpsPinReason =
    "MPS client: its memory stays on its GPU (docs/arbiter.md, Co-running)";
inline constexpr std::string_view kConfinedPinReason =
    "its process does not see every GPU at its own number (CUDA_VISIBLE_DEVICES, its container's "
    "devices): its memory stays on its GPU (docs/protocol.md, Which GPU is which)";
// What RefusePinned is asked about an MPS client: kSwapInPlace, a swap-out of it that leaves it
// on its GPU (to be swapped back in there: allowed with mps_swaps_verified); kOffItsGpu, a move
// to another GPU, a deep eviction, a drain's evacuation (always refused).
enum class PinnedOp : uint8_t { kSwapInPlace, kOffItsGpu };

// How long a client may stay inside a write of its channel (its burst seqlock odd or changing
// whenever the arbiter looks) before it counts as malformed: far longer than a descheduled
// honest writer on a loaded machine needs, short enough that a stuck one is removed.
inline constexpr uint64_t kChannelBusyLimitNs = 2'000'000'000;
inline constexpr uint64_t kChannelBusyRecheckNs = 10'000'000;  // re-read a busy channel after


struct Client {
  uint32_t id = 0;
  policy::FunctionId fid = policy::kNoFunction;
  shm::RegistrationConnection conn;
  shm::ArbiterChannel chan;
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  uint64_t quota = 0;
  uint32_t slo_ms = 0;
  std::string name;
  std::string pod_namespace;  // the Kubernetes pod, "" when unknown (DNS-1123, checked)
  std::string pod_name;
  // Its process's MPS compute share in percent as its registration reported it (0: not an MPS
  // client: it never co-runs). Fixed for the process's life.
  uint32_t mps_share = 0;
  // Which GPUs its process sees, as which of its devices (device_view.h). Confined (it does not
  // see every managed GPU at its own ordinal): it stays on its GPU, as an MPS client does.
  DeviceView view;
  bool Stays() const { return mps_share != 0 || view.confined; }
  // Whether its GPU's MPS daemon, the arbiter's, lists its process among its clients: the share
  // it reports is the shim's word, believed for co-running only once the daemon confirms it
  // (CheckMpsClient, after a solo burst: a real MPS client reaches its server when it creates a
  // context). Not checked where the arbiter runs no daemon for its GPU.
  enum class MpsCheck : uint8_t { kUnchecked, kChecking, kServed, kNotServed };
  MpsCheck mps_check = MpsCheck::kUnchecked;
  uint64_t mps_check_after_ns = 0;    // no new check before (after "not served": a back-off)
  uint64_t mps_check_backoff_ns = 0;
  bool pin_warned = false;  // a refused swap-out or move of it (MPS client) was logged
  // The policy's share class for it (ShareFor at registration), in percent: what its process
  // should be started with on a co-run GPU.
  uint32_t share_advice = 100;
  // What its kernels use alone, in percent, as the tenant declared it (0: unknown).
  uint8_t compute_demand_pct = 0;
  uint8_t bandwidth_demand_pct = 0;

  // Its phase in docs/arbiter.md's state diagram, its GPU, its hold of a token and its driver
  // job: changed only by the session's transitions (client_session.h).
  ClientSession session;
  bool shadow = false;  // resident although the policy believes it is not (adapter-managed)
  SwapOrders transfers;  // front: the order in flight (or waiting for room); swap_orders.h
  // A grant the policy issued while the client was not resident on that GPU (e.g. after
  // enforcement checkpointed it): executed when the swap-in / restore completes.
  std::optional<std::pair<GpuIndex, policy::Duration>> pending_grant;
  bool enforce_warned = false;

  uint64_t grant_ns = 0;
  uint64_t slice_deadline_ns = 0;
  bool preempt_sent = false;
  uint64_t preempt_ns = 0;
  bool burst_outstanding = false;  // BurstStart delivered to the policy, no BurstEnd yet
  uint64_t last_use_ns = 0;
  uint64_t channel_busy_since_ns = 0;  // first read that found a write in progress (0: none)
  uint64_t deadline_ns = 0;  // current burst: start + SLO (for the next-in-line hint)
  uint64_t burst_start_ns = 0;  // current burst's start as the client reported it
  bool corun_grant = false;  // its current grant joined (or formed) a co-run set
  SoloReference solo;  // its solo bursts, the reference its co-run bursts are judged by
  // A co-run grant the co-run rules refused: it runs exclusively once its GPU is free
  // (GrantDeferred), unless the policy preempts it first. (GPU, slice.)
  std::optional<std::pair<GpuIndex, policy::Duration>> deferred_grant;
  bool hinted = false;       // told it is next in line

  // The lease (arbiter_lease.cc). An offer outstanding is chan.lease_offered(); its GPU is in
  // the arbiter's LeaseBook; the rest of the client's side is `lease` (both lease_book.h).
  ClientLease lease;

  uint32_t swapin_requests_seen = 0;
  // The client's count of bursts started (its channel's bursts_started) when the arbiter last
  // started a burst for it: a client in a burst with a later count has started one the arbiter
  // has not (StartBurstIfAsked), one with this count is still in that burst.
  uint32_t burst_number = 0;

  DoorbellGuard doorbell;  // flooding defence (arbiter_loop.cc, doorbell_guard.h)
  DeadlineQueue::ClientMarks deadline_marks;  // its entries in deadlines_ (arbiter_deadlines.cc)
  // The release spin for a draining holder runs once per grant (a holder that drains and rings
  // without releasing must not make the arbiter spin at every ring).
  bool release_spun = false;

  // RemoveClient while a driver job (session.op()) was in flight: the removal (with this reason)
  // happens at its end.
  std::optional<Unregister> removal_pending;
  bool pid_watched = false;  // its pidfd is in the epoll set (kTagClientExit)

  ClientTelemetry tel;                  // counted by Telemetry's hooks (telemetry.h)
  std::optional<uint32_t> pending_slo;  // set-slo waiting for the client to be idle
  uint64_t registered_ns = 0;
};

// c's hold of GPU g (its CUDA ordinal `ordinal`) ended at now_ns, as Telemetry::Released counts
// it; `burst_ended`: its burst ended at burst_end_ns (else only its slice did).
inline Release HoldEnded(const Client& c, GpuIndex g, DeviceOrdinal ordinal, uint64_t now_ns,
                         bool burst_ended, uint64_t burst_end_ns) {
  Release r;
  r.client = c.id;
  r.series = SeriesKey(c.name, c.pod_namespace, c.pod_name);
  r.gpu = g;
  r.ordinal = ordinal;
  r.slo_ms = c.slo_ms;
  r.grant_ns = c.grant_ns;
  r.now_ns = now_ns;
  r.burst_ended = burst_ended;
  r.burst_end_ns = burst_end_ns;
  return r;
}

// "" when c's session agrees with the rest of its state (its swap orders, its GPU's holders),
// else what is wrong (invariant 7; client_phase.cc).
std::string CheckClientState(const Client& c);

// The reservation of a live process the arbiter disconnected (invariant 6): it still holds its
// device memory, so nobody else may be given it. Owns its pidfd (watched in the epoll set: it
// becomes readable when the process exits).
struct Orphan {
  uint32_t id = 0;         // never reused within an epoch; the epoll tag's low half
  uint32_t client_id = 0;  // the client it was
  pid_t pid = 0;
  uid_t uid = 0;
  std::string name;
  GpuIndex gpu;
  uint64_t bytes = 0;
  uint32_t mps_share = 0;  // the client's MPS share: nonzero, its process is still the server's
  Unregister reason = Unregister::kMalformed;  // what disconnected it (DisconnectedAlive)
  uint64_t since_ns = 0;
  shm::UniqueFd pidfd;
};

// Why an orphan was released (ArbiterStats::orphans_released_*, /metrics cause label).
enum class OrphanRelease : uint8_t { kExited, kReRegistered, kNoDevice };

// A GPU's memory accounts are in the ReservationBook (book_), not here.
// The GPU's ordinal and memory are GpuInfo's, typed (gpu_ids.h).
struct GpuState {
  DeviceOrdinal ordinal;
  uint64_t memory_bytes = 0;  // total device memory
  GpuHolders holders;  // who holds the token (invariant 3)
  bool drained = false;  // gshare-ctl drain: everyone swapped out, no new residency
  std::array<uint8_t, 16> uuid{};  // the driver's; all 0: not known
};

}  // namespace gshare::arbiter
