// Arbiter: the node daemon's logic, usable in-process (tests) and by gshare-arbiter (main.cc).
// One epoll event loop owns the truth: registered clients and their channels, per-GPU token
// holder, per-vGPU residency, per-GPU memory reservations, swap orders in flight; it drives a
// scheduling policy through gshare/policy/policy.h and writes the node event ring.
// The design and state machine are in docs/arbiter.md.
//
// Ownership: the Arbiter owns its listening socket, epoll/timer/signal/stop fds, every client's
// connection and channel, and the event ring. Thread-safety: Run() on one thread; Stop() may be
// called from any thread (and from a signal handler: it writes an eventfd); stats() is safe
// after Run() returned.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gshare/arbiter/config.h"
#include "gshare/shm/status.h"

namespace gshare::arbiter {

// One managed GPU as the arbiter sees it.
struct GpuInfo {
  uint32_t ordinal = 0;       // CUDA device ordinal (what clients and swap orders name)
  uint64_t memory_bytes = 0;  // total device memory
  std::array<uint8_t, 16> uuid{};  // the driver's UUID of the GPU; all 0: not known (gpu_memory)
};

struct GpuStats {
  uint32_t ordinal = 0;
  uint64_t usable_bytes = 0;         // memory minus the reserve
  uint64_t reserved_bytes = 0;       // quotas of the vGPUs resident (or becoming resident) now
  uint64_t peak_reserved_bytes = 0;  // the most ever reserved at once (never > usable)
  uint64_t overshoot_events = 0;     // re-registrations that arrived resident beyond usable
  // Part of reserved_bytes: reservations of live processes the arbiter disconnected, kept until
  // the process exits, registers again or is known to hold nothing (docs/arbiter.md, "Orphans").
  uint64_t orphaned_bytes = 0;
  uint32_t orphans = 0;
  // Part of reserved_bytes: the contexts of the registered MPS clients on the GPU, counted
  // whether or not their vGPUs are resident (docs/arbiter.md, "MPS context memory").
  uint64_t mps_context_bytes = 0;
};

struct ArbiterStats {
  std::vector<GpuStats> gpus;
  uint64_t registrations = 0;
  uint64_t re_registrations = 0;
  uint64_t refusals = 0;
  uint64_t grants = 0;
  uint64_t yields = 0;
  uint64_t preemptions = 0;
  uint64_t swap_outs = 0;
  uint64_t swap_ins = 0;
  uint64_t client_deaths = 0;
  uint64_t malformed_channels = 0;
  uint64_t enforcements = 0;  // clients locked and checkpointed for not yielding
  uint64_t deep_evictions = 0;  // idle vGPUs checkpointed after deep_evict_after
  uint64_t restores = 0;
  // Swapped-out functions whose process was moved to another GPU through the checkpoint
  // (contexts follow the vGPU: docs/multi-gpu.md).
  uint64_t context_moves = 0;
  uint64_t doorbell_mutes = 0;     // a client's doorbell muted for exceeding doorbell_rate
  uint64_t flood_disconnects = 0;  // clients disconnected for flooding (doorbell_flood_disconnect)
  uint64_t order_timeouts = 0;     // clients disconnected for not acknowledging a swap order
  uint64_t unenforceable = 0;      // holders disconnected: preemption ignored, checkpoint failed
  // Sole-tenant leases (docs/arbiter.md, "The lease"). A take is also counted in `grants`.
  uint64_t lease_offers = 0;
  uint64_t lease_takes = 0;         // offers the client took (a grant without a round trip)
  uint64_t lease_revokes = 0;       // offers withdrawn before a take
  uint64_t lease_revokes_lost = 0;  // revocations that found the lease taken (the client held)
  uint64_t lease_unconfirmed = 0;   // takes the policy did not grant at once (holder preempted)
  // Co-running (docs/arbiter.md, "Co-running").
  uint64_t corun_joins = 0;        // grants that joined a co-run set
  uint64_t corun_refusals = 0;     // co-run grants the rules refused (answered as a slice end)
  uint64_t corun_revocations = 0;  // sets revoked: a member's latency threatened its SLO
  uint64_t mps_terminations = 0;   // MPS clients that ignored preemption, terminated by MPS
  uint64_t mps_terminations_capped = 0;  // ... disconnected instead: their uid's cap was reached
  uint64_t mps_pins_refused = 0;   // swap-outs / moves of MPS clients refused (memory stays)
  uint64_t mps_clients_unserved = 0;  // MPS shares reported that the GPU's daemon did not serve
  uint64_t share_queries = 0;      // share queries answered (before a process's cuInit)
  // Orphan reservations (docs/arbiter.md, "Orphans"): created when the arbiter disconnects a
  // live process that holds device memory; released by cause.
  uint64_t orphans_created = 0;
  uint64_t orphans_released_exited = 0;        // the process exited (its pidfd)
  uint64_t orphans_released_reregistered = 0;  // the same process registered again
  uint64_t orphans_released_no_device = 0;     // the driver knows no CUDA state of the process
  // Tenants' limits (docs/arbiter.md, "Limits per tenant"); each is also in `refusals`.
  uint64_t refusals_limit = 0;    // over max_clients_per_uid/_per_pid or the registration rate
  uint64_t refusals_backoff = 0;  // a uid in back-off after an unenforceable disconnection
  // Registrations that claimed to be resident and were not believed (not right after a restart
  // or an orphan, a second claim of the process, beyond the GPU, or a process the driver knows
  // no CUDA state of): accepted as swapped out, their memory ordered off the GPU first.
  uint64_t resident_claims_refused = 0;
  // Clients whose registering process exited while something else (a forked child) still held
  // their connection open: gone all the same.
  uint64_t exited_with_connection_held = 0;
  // The registration intake (registration_intake.h): connections closed without a request in
  // time, refused for too many waiting, malformed requests, refused when out of descriptors.
  uint64_t registration_timeouts = 0;
  uint64_t registration_pending_refused = 0;
  uint64_t registration_malformed = 0;
  uint64_t registration_out_of_fds = 0;
  // Loop iterations after which CheckInvariants found a violation (`check_invariants`).
  uint64_t invariant_violations = 0;
  // Times the loop spun briefly for a draining holder's release (at most once per grant).
  uint64_t release_spins = 0;
  // State that must follow the live tenants, not the history (registration churn): policy
  // function ids ever allocated (reused after FunctionGone: the most functions at once), the
  // policy's per-function entries, uids the arbiter keeps state for.
  uint64_t function_ids = 0;
  uint64_t policy_entries = 0;
  uint64_t tracked_uids = 0;
};

// The GPUs to manage: from config.gpu_memory (gpu_count identical GPUs, no driver needed) or
// from the driver named by config.libcuda, filtered by config.gpus. Errors name the key.
shm::Result<std::vector<GpuInfo>> ResolveGpus(const ArbiterConfig& config);

class Arbiter {
 public:
  // Binds the socket, creates the policy and the event ring. `handle_signals`: block SIGTERM,
  // SIGINT in the calling thread and treat them as Stop() (the daemon; tests pass false).
  static shm::Result<std::unique_ptr<Arbiter>> Create(const ArbiterConfig& config,
                                                      std::vector<GpuInfo> gpus,
                                                      bool handle_signals);
  virtual ~Arbiter() = default;
  Arbiter(const Arbiter&) = delete;
  Arbiter& operator=(const Arbiter&) = delete;

  // Serves until Stop() or a handled signal, then shuts down cleanly: no new grants or
  // registrations, holders finish their slice (bounded by slice + preempt grace), every client
  // is told goodbye. Returns an error only if the loop itself failed.
  virtual shm::Status Run() = 0;
  // Asks Run() to shut down. Async-signal-safe and thread-safe.
  virtual void Stop() = 0;
  virtual ArbiterStats stats() const = 0;
  virtual uint64_t epoch() const = 0;

 protected:
  Arbiter() = default;
};

// Writes `stats` as JSON to `path`. Errors as values.
shm::Status WriteSummary(const std::string& path, const ArbiterStats& stats);

}  // namespace gshare::arbiter
