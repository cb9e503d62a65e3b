// ClientSession: where one client stands in docs/arbiter.md's state diagram ("Client state
// machine"), kept as one stored phase, and the only ways to move it: transition methods that
// check their source phase and refuse (changing nothing) a transition the diagram does not have.
// A transition returns a `Transition`: refused, or done with the command the loop (ArbiterImpl)
// carries out on the reservation book — release the quota's reservation where its memory left
// the GPU (the shape DoorbellGuard's verdicts have) — so that the book follows the phase instead
// of a call written beside each transition.
// The loop carries out the rest of what a transition means (the channel's orders, the policy's
// events); the session only says where the client is, so that the phase is never a product of
// flags written in many places.
//
// Phases and transitions (the intermediate phases a driver job needs included):
//   kOut ──OrderIssued(swap-in)──> kSwappingIn ──OrderAcknowledged──> kResident | kOut (failed)
//   kResident ──OrderIssued(swap-out)──> kSwappingOut ──OrderAcknowledged──> kOut | kResident
//   kOut ──ClaimResident (registration)──> kResident
//   kResident ──Granted──> kHolding ──Dropped──> kResident
//   kHolding ──OpStarted(enforce | MPS terminate)──> kEnforcing ──OpEnded──> kHolding (or
//            kResident if its hold was dropped meanwhile)
//   kResident ──OpStarted(deep evict)──> kDeepEvicting ──OpEnded──> kResident
//   kCheckpointed ──OpStarted(restore)──> kRestoring ──OpEnded──> kCheckpointed
//   kOut ──OpStarted(move)──> kMoving ──OpEnded──> kOut
//   kResident | kOut ──Checkpointed──> kCheckpointed ──Restored──> kResident
// A driver job's outcome is applied after OpEnded (Checkpointed, Restored, MovedTo), so a job
// that fails leaves the client where it was before the job.
//
// Pure logic (no fds, no clock); one thread per object (the arbiter's loop). Unit-tested
// without sockets (tests/arbiter/client_session_test.cc).
#pragma once

#include <cstdint>
#include <string>

#include "gpu_ids.h"
#include "gshare/common/status.h"
#include "gshare/shm/channel.h"

namespace gshare::arbiter {

// Where a client's device memory is, as the arbiter knows it.
enum class Where : uint8_t { kResident, kOut, kCheckpointed };

// A driver operation in flight for a client (at most one: arbiter_driver.cc). While one is in
// flight the client's channel is not acted on (it is read again when the operation completes)
// and its removal waits for the completion.
// kTerminating: MPS's safe termination of an MPS client that ignored preemption (the checkpoint
// API is not assumed to work for MPS clients: docs/arbiter.md, "Co-running").
enum class DriverOp : uint8_t {
  kNone,
  kEnforcing,
  kDeepEvicting,
  kRestoring,
  kMoving,
  kTerminating
};
const char* DriverOpName(DriverOp op);

// A client's phase: what the control socket's clients list shows (`phase`).
enum class Phase : uint8_t {
  kOut,           // its memory is on the host (or nowhere yet)
  kSwappingIn,    // a swap-in order is in flight
  kResident,      // its memory is on its GPU, it does not hold the GPU
  kHolding,       // it holds its GPU's token
  kSwappingOut,   // a swap-out order is in flight
  kEnforcing,     // the driver worker locks and checkpoints it, or MPS terminates it (it ignored
                  // a preemption)
  kDeepEvicting,  // the driver worker checkpoints it (idle for deep_evict_after)
  kCheckpointed,  // its process is frozen by a checkpoint, its memory with the driver
  kRestoring,     // the driver worker restores it onto its reserved GPU
  kMoving,        // the driver worker moves its contexts to another GPU before a swap-in
};
const char* PhaseName(Phase p);

// What the loop must do to the reservation book after a transition:
//   OrderAcknowledged: a swap-out done, a swap-in failed -> kUnreserve (its memory left the GPU,
//                                                           or never came: its target's)
//   Checkpointed from kResident                          -> kUnreserve (the driver holds it)
// Every other transition: kNone. Reservations are made by the loop before the memory arrives,
// where it decides that it fits (a swap-in's or a restore's target before its order or job, a
// registration's resident claim that fits), and stay when the transition succeeds.
enum class Command : uint8_t { kNone, kUnreserve };
const char* CommandName(Command c);

// A transition's result: refused (`status` says why; nothing changed, no command) or done, with
// the command to carry out.
struct [[nodiscard]] Transition {
  Status status;
  Command command = Command::kNone;
  bool ok() const { return status.ok(); }
  operator Status() const { return status; }  // NOLINT: where only success matters
};
// Warm: the instance's memory is on its GPU and stays there (resident or holding): a request
// sent to it waits for no swap-in or restore (the `instances` view, for platforms' routers).
bool IsWarm(Phase p);

class ClientSession {
 public:
  // A new client: out, on the GPU its registration was assigned.
  explicit ClientSession(GpuIndex gpu = GpuIndex{}) : gpu_(gpu) {}

  Phase phase() const { return phase_; }
  // Where its memory is: on its GPU while resident, holding, swapping out, being enforced on or
  // deep-evicted; with the driver while checkpointed or restoring; else on the host.
  Where where() const;
  // The GPU it is resident on, or was last (its contexts' GPU): a swap-in's target becomes it
  // when acknowledged, a restore's or a move's when done.
  GpuIndex gpu() const { return gpu_; }
  // Whether it holds a GPU's token: holding, or being enforced on while its hold stands.
  bool holding() const { return holds_; }
  GpuIndex hold_gpu() const { return hold_gpu_; }  // the GPU it holds (or held last)
  DriverOp op() const { return op_; }
  uint64_t op_job() const { return op_job_; }
  GpuIndex op_target() const { return op_target_; }        // a restore's or move's GPU (kept after)
  GpuIndex order_target() const { return order_target_; }  // the swap order in flight's GPU

  // ---- registration
  // kOut: the GPU the registration assigned (nothing happened to the client yet).
  Transition AssignGpu(GpuIndex g);
  // kOut -> kResident on gpu(): a fresh vGPU that fits, or a resident claim believed.
  Transition ClaimResident();

  // ---- swap orders (one in flight: invariant 4)
  // kOut -> kSwappingIn (target: where it goes), kResident -> kSwappingOut (target: gpu()).
  Transition OrderIssued(shm::SwapOp op, GpuIndex target);
  // The order in flight acknowledged: a swap-in that worked makes it resident on its target, one
  // that failed leaves it out; a swap-out that worked leaves it out, one that failed resident.
  Transition OrderAcknowledged(bool ok);

  // ---- the token (invariant 3)
  // kResident on g -> kHolding.
  Transition Granted(GpuIndex g);
  // Its hold ends (a release, a revocation, its removal): kHolding -> kResident; while being
  // enforced on, the hold ends and the job goes on. Nothing to do when it does not hold.
  void Dropped();

  // ---- driver operations (one in flight)
  // kEnforcing and kTerminating from kHolding; kDeepEvicting from kResident; kRestoring from
  // kCheckpointed and kMoving from kOut, each with its target GPU.
  Transition OpStarted(DriverOp op, uint64_t job, GpuIndex target = GpuIndex{});
  // The job's completion: back to the phase it started from (kHolding only if its hold still
  // stands). Returns the operation that ended (kNone: none was in flight).
  DriverOp OpEnded();
  // kResident (a checkpoint after the hold was dropped, a deep eviction) or kOut (a failed move
  // left it frozen) -> kCheckpointed.
  Transition Checkpointed();
  // kCheckpointed -> kResident on `g` (a restore).
  Transition Restored(GpuIndex g);
  // kOut: its contexts are on `g` now (a move done before its swap-in).
  Transition MovedTo(GpuIndex g);

 private:
  Transition Refuse(const char* transition) const;

  Phase phase_ = Phase::kOut;
  GpuIndex gpu_;
  bool holds_ = false;
  GpuIndex hold_gpu_;
  DriverOp op_ = DriverOp::kNone;
  uint64_t op_job_ = 0;
  GpuIndex op_target_;
  GpuIndex order_target_;
  shm::SwapOp order_ = shm::SwapOp::kNone;
};

}  // namespace gshare::arbiter
