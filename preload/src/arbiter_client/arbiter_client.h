// ArbiterClient: the shim's side of the arbiter protocol (docs/arbiter.md, "The client").
// Registers the vGPU with gshare-arbiter over its Unix socket, then keeps the time-slice
// token and the vGPU's residency in step with the arbiter:
//   - Acquire() (the submission gate's slow path) makes the vGPU resident (by *requesting* a
//     swap-in, never doing one on its own) and waits for the token (bounded spinning when the
//     arbiter says "you are next", futex otherwise), then opens the gate. A sole tenant whose
//     arbiter left it a lease (its next grant in advance) takes it with one CAS instead: no
//     doorbell, no wait, no system call; the service thread tells the arbiter afterwards;
//   - a service thread releases the token when the arbiter preempts (end of slice while others
//     wait) or after `idle_release` without submissions, draining the process's in-flight work
//     first; it reports burst starts/ends with GPU time; it obeys swap orders and acknowledges
//     them with bytes and time; it watches the connection and, when the arbiter dies, runs
//     the process under its last assignment (fail-open) or holds submissions (fail-closed)
//     and re-registers when an arbiter is back.
//
// The client never touches CUDA itself: the shim passes a ShimHost (the runtime's gate, drain
// and VgpuMemory swap calls); tests pass a fake.
//
// Ownership: Start() returns the sole owner; the service thread is joined by the destructor
// (the shim never destroys it: process-lifetime). Thread-safety: Acquire() from any number of
// submitting threads; everything else is internal.
#pragma once

#include <chrono>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gshare/common/thread_annotations.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/registration.h"

namespace spdlog {
class logger;
}

namespace gshare::preload {

struct SwapOutcome {
  bool ok = false;
  uint64_t bytes = 0;
  uint64_t duration_ns = 0;
};

// What the client needs from the shim. Every method is called from the client's threads;
// none may call back into the ArbiterClient. Resident, CurrentGpu, OpenGate, GrantedOn,
// TakeActivity, LastActivityWasInFlightOnly and Capturing may be called with the client's
// mutex held (so they may take only locks ordered after it: the runtime's swap mutex and
// those under it, preload/src/runtime/runtime.h "Lock order"); the others are called without.
class ShimHost {
 public:
  virtual ~ShimHost() = default;
  // Stops new submissions and waits until the admitted ones have returned (gate close).
  virtual void CloseGate() = 0;
  // Admits submissions again.
  virtual void OpenGate() = 0;
  // Waits for the process's in-flight GPU work (tracked streams and events; never a stream
  // that is being captured). False if draining failed (the token is released anyway).
  virtual bool Drain() = 0;
  // True if a submission was admitted since the previous call (clears the mark) or GPU work
  // is still in flight (checked without blocking): the process is not idle.
  virtual bool TakeActivity() = 0;
  // True if the last TakeActivity() found work in flight but no new submission (the service
  // thread then backs its tick off: the release would have to wait for that work anyway).
  virtual bool LastActivityWasInFlightOnly() const { return false; }
  // True while a stream of the process is being captured into a graph: a preemption is then
  // not obeyed until the capture ends (releasing would interrupt it).
  virtual bool Capturing() { return false; }
  // Swaps the vGPU out (device memory released, addresses kept) / in onto `gpu`.
  virtual SwapOutcome SwapOut() = 0;
  virtual SwapOutcome SwapIn(uint32_t gpu) = 0;
  // Installs (empty: removes) a sink told the bytes a running swap has moved so far, called
  // from inside SwapOut/SwapIn (possibly from several of the swap's threads at once). The
  // client reports it to the arbiter as the order's progress: an order that keeps progressing
  // is not taken for a dead client however slow the node is. Hosts that cannot tell ignore it.
  using SwapProgressSink = std::function<void(uint64_t bytes_so_far)>;
  virtual void SetSwapProgressSink(SwapProgressSink sink) { (void)sink; }
  // Prepares the next swap-out while the process is idle (pins host staging for the current
  // footprint, off the swap's critical path). Called by the service thread, never while a swap
  // runs; may take a while on a real driver.
  virtual void PrepareSwapOut() {}
  virtual bool Resident() const = 0;
  virtual uint64_t ResidentBytes() const = 0;
  // The GPU the vGPU is resident on (meaningful while Resident()).
  virtual uint32_t CurrentGpu() const = 0;
  // Registration assigned `gpu` to a vGPU that holds no memory yet (inside cuInit, before the
  // application has a context): put it there. The default swaps the empty vGPU out and in;
  // the shim just re-homes it (no driver call, so no context is created on the old GPU).
  virtual void MoveEmptyTo(uint32_t gpu) {
    (void)SwapOut();
    if (!SwapIn(gpu).ok) (void)SwapIn(CurrentGpu());
  }
  // A grant (or lease) for `gpu` is about to open the gate: if the vGPU is on another GPU, the
  // arbiter moved the whole process there with the driver's checkpoint restore, and the host
  // follows (ShimHost implementations without devices ignore it). Must be cheap when nothing
  // moved: called on every acquisition.
  virtual void GrantedOn(uint32_t gpu) { (void)gpu; }
  // The process's view of the GPUs (docs/protocol.md, "Which GPU is which"): the driver's UUID
  // of each of its devices in its order (empty: not known; the arbiter then takes its device d
  // for GPU d). With them, a registration names where its memory is as CurrentDevice(), and the
  // reply's ordinal of each device is given to SetDeviceGpus (before anything is translated).
  virtual std::vector<std::array<uint8_t, 16>> DeviceUuids() const { return {}; }
  virtual uint32_t CurrentDevice() const { return CurrentGpu(); }
  virtual void SetDeviceGpus(std::span<const uint32_t> gpus) { (void)gpus; }
};

struct ArbiterClientOptions {
  std::string socket_path;     // GSHARE_ARBITER_SOCKET
  uint64_t quota_bytes = 0;    // GSHARE_VGPU_MEMORY (non-zero)
  uint32_t slo_ms = 1000;      // GSHARE_SLO_MS
  std::string function_name;   // GSHARE_FUNCTION
  std::string pod_namespace;   // GSHARE_POD_NAMESPACE (validated; "" = unknown)
  std::string pod_name;        // GSHARE_POD_NAME (validated; "" = unknown)
  // Co-running: the MPS share its process runs at (0: not an MPS client), the declared demands
  // (GSHARE_CORUN_DEMAND; 0: unknown).
  uint32_t mps_share = 0;
  uint8_t compute_demand_pct = 0;
  uint8_t bandwidth_demand_pct = 0;
  std::chrono::nanoseconds idle_release{std::chrono::microseconds(300)};  // GSHARE_IDLE_RELEASE_US
  bool fail_closed = false;    // GSHARE_ARBITER_FAIL=closed
  bool prepare_swap_out = true;  // GSHARE_PREPIN: ShimHost::PrepareSwapOut while idle
  bool use_lease = true;         // GSHARE_LEASE: take the sole-tenant lease when offered
  std::chrono::nanoseconds reconnect_interval{std::chrono::milliseconds(50)};
  std::chrono::nanoseconds register_timeout{std::chrono::seconds(2)};
  // A first registration that finds no arbiter (nothing listening, not accepting, gone while
  // registering) is retried in the background, the process stand-alone meanwhile: after
  // register_retry_initial, doubling up to register_retry_max (GSHARE_REGISTER_RETRY).
  // register_retry_max 0: never retried (Start returns kUnavailable, as before).
  std::chrono::nanoseconds register_retry_initial{std::chrono::milliseconds(50)};
  std::chrono::nanoseconds register_retry_max{std::chrono::seconds(5)};
  spdlog::logger* log = nullptr;  // null: silent
};

class ArbiterClient {
 public:
  // Registers and starts the service thread. Errors: kRefused (message = the arbiter's reason),
  // others from shm/; kUnavailable (no arbiter) only when register_retry_max is 0. With retries
  // on, a first registration that finds no arbiter returns a client that is not registered
  // (registered_once() false, *first_error set when given): the process runs stand-alone, as
  // without an arbiter, and the service thread registers in the background (kFlagLate, with
  // back-off) — from then on submissions need the token, as after a re-registration.
  static shm::Result<std::unique_ptr<ArbiterClient>> Start(const ArbiterClientOptions& options,
                                                           ShimHost* host,
                                                           shm::Status* first_error = nullptr);
  ~ArbiterClient();
  ArbiterClient(const ArbiterClient&) = delete;
  ArbiterClient& operator=(const ArbiterClient&) = delete;

  // The gate's slow path. Returns true once the vGPU is resident, holds the token and the gate
  // has been opened (the caller retries its TryEnter: a release may close the gate again).
  // Returns false when the client runs stand-alone (the arbiter is gone and fail-open, or the
  // client is stopping): the caller admits submissions on its own (resident, gate open). In
  // fail-closed mode it waits for the arbiter to come back. A grant that finds the vGPU
  // swapped out (a swap order raced with it) requests the swap-in before opening the gate.
  bool Acquire() EXCLUDES(mu_);

  // The process exits normally (the shim's atexit handler): releases the token if held
  // (draining), stops the service thread (waiting for it at most `wait`), tells the arbiter
  // goodbye (a clean unregister, not a client death) and leaves the process stand-alone so
  // submissions made while it exits still run. Never blocks longer than about `wait` plus a
  // drain; idempotent; from any thread except the service thread.
  void SayGoodbye(const std::string& reason, std::chrono::milliseconds wait) EXCLUDES(mu_);

  // In a forked child (the shim's pthread_atfork child handler): drops the child's copy of this
  // process's registration — closes the registration connection, the channel's memfd and the
  // doorbell, and unmaps the channel — so the child neither keeps the parent registered (the
  // arbiter sees EOF when the parent goes) nor can write the parent's channel. The object is
  // abandoned in the child afterwards (never used, never destroyed: its mutex, condition
  // variable and service thread belong to the parent). Only close() and munmap() of values read
  // from atomics: no lock (another parent thread may have held mu_ at fork time), no
  // allocation, no log. Idempotent.
  void DropInheritedAfterFork();

  // For tests and the control socket.
  bool connected() const EXCLUDES(mu_);
  uint32_t client_id() const EXCLUDES(mu_);
  uint64_t registrations() const EXCLUDES(mu_);
  // True once a registration was accepted (false while a late first registration is retried).
  bool registered_once() const EXCLUDES(mu_);
  bool holding() const EXCLUDES(mu_);
  // Acquisitions that took the arbiter's lease (no round trip) / that waited for a grant.
  uint64_t lease_takes() const EXCLUDES(mu_);
  uint64_t waited_grants() const EXCLUDES(mu_);
  // Grants given back at once because nothing here asked for them (the service thread's stray
  // grant check): after a preemption mid-burst, the answer to "wants it again" is not one.
  uint64_t stray_releases() const EXCLUDES(mu_);

 private:
  enum class TokenState { kNone, kAcquiring, kHeld, kReleasing, kStandalone };
  // A first registration (in Start), a late first one (retried by the service thread after the
  // first found no arbiter) or a re-registration (after the arbiter was lost).
  enum class Registration { kFirst, kLate, kAgain };

  ArbiterClient(const ArbiterClientOptions& options, ShimHost* host);
  shm::Status Connect(Registration kind) EXCLUDES(mu_);
  // The service thread's late first registration: one attempt when its back-off has passed.
  // True when it registered (the caller then leaves stand-alone mode).
  bool TryLateRegistration(uint64_t now) EXCLUDES(mu_);
  // A (re-)registration was accepted: a stand-alone process's submissions need the token again.
  void LeaveStandalone() EXCLUDES(mu_);
  void ServiceLoop() EXCLUDES(mu_);
  void HandleSwapOrder(const shm::SwapOrder& order) EXCLUDES(mu_);
  // The swap progress sink: reports the running order's progress in its channel (any thread).
  void ReportSwapProgress(uint64_t bytes);
  // Drains and releases the held token. `only_if_still_idle` (idle release): gives up, keeping
  // the token, if work was submitted between the idle decision and the gate's closing.
  void Release(bool want_again, bool only_if_still_idle = false) EXCLUDES(mu_);
  void OnArbiterLost(const std::string& why) EXCLUDES(mu_);
  // Waits (mu_ dropped while waiting) until the vGPU is resident; false if the connection
  // changed or the client stops first.
  bool WaitResident() REQUIRES(mu_);

  ArbiterClientOptions options_;
  ShimHost* host_;

  // Lock order: after the runtime's init mutex (Init starts the client), before the runtime's
  // swap mutex and everything under it (the ShimHost calls made with mu_ held, above). Never
  // taken by the swap progress sink (it runs under the vGPU memory's lock).
  mutable Mutex mu_;
  CondVar cv_;
  TokenState state_ GUARDED_BY(mu_) = TokenState::kNone;
  bool connected_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  bool thread_exited_ GUARDED_BY(mu_) = false;
  bool said_goodbye_ GUARDED_BY(mu_) = false;
  shm::UniqueFd connection_ GUARDED_BY(mu_);  // replaced on re-registration
  std::shared_ptr<shm::ClientChannel> channel_ GUARDED_BY(mu_);  // kept alive by users
  uint32_t client_id_ GUARDED_BY(mu_) = 0;
  uint64_t registrations_ GUARDED_BY(mu_) = 0;
  // A late first registration is pending (service thread: retried with back-off until accepted;
  // stops on a refusal or a version mismatch, leaving the process stand-alone for good).
  bool late_pending_ GUARDED_BY(mu_) = false;
  uint64_t late_next_ns_ = 0;                      // service thread only
  std::chrono::nanoseconds late_backoff_{0};       // service thread only
  uint64_t late_attempts_ = 0;                     // service thread only
  shm::GrantInfo grant_ GUARDED_BY(mu_);
  uint32_t last_order_seq_ = 0;                    // service thread only
  // The order being carried out and its channel, for the swap progress sink (which runs on the
  // swap's threads and must not take mu_: they hold the vGPU's lock, which Acquire's
  // residency checks take under mu_). Set by HandleSwapOrder around the swap, which keeps the
  // channel alive meanwhile; null / 0 otherwise.
  std::atomic<shm::ClientChannel*> progress_channel_{nullptr};
  std::atomic<uint32_t> progress_seq_{0};
  uint64_t last_prepare_ns_ = 0;                   // service thread only
  std::chrono::nanoseconds held_tick_{0};          // service thread only (0: the base tick)
  bool in_burst_ GUARDED_BY(mu_) = false;
  uint64_t burst_gpu_ns_ GUARDED_BY(mu_) = 0;
  uint64_t held_since_ns_ GUARDED_BY(mu_) = 0;
  uint64_t last_activity_ns_ GUARDED_BY(mu_) = 0;
  bool announce_take_ GUARDED_BY(mu_) = false;  // a lease take the arbiter was not told of yet
  uint64_t lease_takes_ GUARDED_BY(mu_) = 0;
  uint64_t waited_grants_ GUARDED_BY(mu_) = 0;
  uint64_t stray_releases_ GUARDED_BY(mu_) = 0;
  // Preempted mid-burst, the last release asked for the GPU again (the channel says waiting):
  // the next grant answers it, whether or not a submission waits in Acquire by then.
  bool wants_again_ GUARDED_BY(mu_) = false;
  std::thread thread_;
  // The current registration's fds and channel mapping, for DropInheritedAfterFork (read
  // without mu_ in a forked child). Connect publishes a new registration's here before the
  // previous one's are closed, so every value seen here is open (or mapped) in the process.
  std::atomic<int> fork_connection_fd_{-1};
  std::atomic<int> fork_channel_fd_{-1};
  std::atomic<int> fork_doorbell_fd_{-1};
  std::atomic<void*> fork_channel_map_{nullptr};
};

}  // namespace gshare::preload
