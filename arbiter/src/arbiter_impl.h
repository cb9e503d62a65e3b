// ArbiterImpl: the state and event loop behind Arbiter (arbiter.h). Split over these files:
//   arbiter_loop.cc      - the loop (waiting on an EventPoller, dispatch by tag), shutdown;
//   arbiter_clients.cc   - registration (arrivals from the intake), validation, tenants' limits,
//                          liveness (socket EOF, the registering process's exit), removal;
//   arbiter_driver.cc    - driver calls about processes (enforcement, deep eviction, restore,
//                          move, thaw, state queries) submitted to the DriverWorker and their
//                          completions: nothing that can block runs on the loop;
//   arbiter_schedule.cc  - channel reports -> policy events, policy actions -> grants,
//                          preemptions and swap orders, memory reservations;
//   arbiter_lease.cc     - the sole tenant's lease: offers, takes, revocations;
//   arbiter_orphans.cc   - reservations of live processes the arbiter disconnected;
//   arbiter_control.cc, arbiter_telemetry.cc - the control socket's commands, metrics; what
//                          status, clients and instances show is StatusViews' (status_views.h).
// The state's types (Client, Orphan, GpuState, Unregister) are in arbiter_state.h.
//   arbiter_deadlines.cc - the loop's timed work (deadline heap, late orders, deep evictions);
//   arbiter_invariants.cc - CheckInvariants and Transit (a refused session transition);
//   arbiter_share_query.cc - the MPS share answered before a process's cuInit.
// Collaborators in the loop's thread, each unit-tested without sockets: ClientSession (a
// client's phase and its transitions), SwapOrders (a client's swap orders, their deadline and
// back-off), ReservationBook (the memory promised on each GPU), LeaseBook (where the lease
// offers stand), StatusViews (what the control socket shows), DeadlineQueue (timed work),
// CorunBook (co-run sets), TenantLimits, DoorbellGuard, ClientTable (the clients by id and by
// policy function id), EventPoller (the epoll set, timer, wake-up and signal descriptors),
// DriverJobs (what each driver job in flight is for), ChooseRoom (which idle vGPUs make room),
// Telemetry (its hooks count waits, holds, SLO verdicts and swaps).
// Collaborators on threads of their own: RegistrationIntake (the registration socket's I/O),
// DriverWorker (driver calls), FdReaper (closing what a peer may make block).
//
// INVARIANTS (checked by CheckInvariants(), arbiter_invariants.cc, after every loop iteration when
// `check_invariants` is on: debug builds, the fault and hostile-tenant suites; violations are
// logged and counted in stats().invariant_violations):
//  1. book_.reserved(g) == sum of quota over clients reserved on g (plus orphans, 6), and it
//     never exceeds book_.usable(g) except through the orphan of a process thawed while
//     leaving, which holds its memory again (counted in overshoot_events). The book keeps the
//     sums from its holders (reservation_book.h); CheckInvariants ties the holders to clients.
//     Resident claims are reserved only when they fit (arbiter_clients.cc, BelieveResidentClaim).
//  2. A swap-in order is issued only after its quota has been reserved on the target GPU.
//     A reservation is released only when a swap-out is acknowledged, a checkpoint succeeded,
//     or the client is gone.
//  3. gpus_[g].holders are the clients holding GPU g's token: at most one, or on a GPU marked
//     for co-running a set of MPS clients of one fault domain (corun.h); each holder's
//     holding == true and hold_gpu == g.
//  4. Each client has at most one swap order in flight (transfer.issued).
//  5. Client ids are never reused within an epoch.
//  7. Each client's phase is stored in its ClientSession (client_session.h), changed only by
//     the session's transitions, which refuse what docs/arbiter.md's diagram does not have (a
//     refused transition is logged and counted as a violation at once: ArbiterImpl::Transit).
//     CheckClientState (client_state_check.cc) ties the phase to the rest of the client's state:
//     a swap order in flight iff swapping in or out (for the session's target), a hold only while
//     holding or being enforced on, a driver job iff in a driver phase.
//  6. book_.orphaned(g) == sum of bytes over orphans_ on g, and it is part of
//     book_.reserved(g) (invariant 1 counts orphans' bytes with the clients' quotas). An orphan
//     is the reservation of a live process the arbiter disconnected (DisconnectedAlive reasons); it
//     is bound to the process by a pidfd (never by the pid alone: pids are reused) and released
//     only when that process exits, registers again (its new registration's reservation replaces
//     it) or the driver knows no CUDA state of it (arbiter_orphans.cc, docs/arbiter.md "Orphans").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "arbiter_state.h"
#include "client_session.h"
#include "client_table.h"
#include "control_server.h"
#include "corun.h"
#include "deadline_queue.h"
#include "doorbell_guard.h"
#include "driver.h"
#include "driver_jobs.h"
#include "driver_worker.h"
#include "event_poller.h"
#include "fd_reaper.h"
#include "gpu_ids.h"
#include "gshare/arbiter/arbiter.h"
#include "gshare/policy/policy.h"
#include "gshare/shm/channel.h"
#include "gshare/shm/event_ring.h"
#include "gshare/shm/registration.h"
#include "lease_book.h"
#include "metrics_server.h"
#include "mps_daemons.h"
#include "registration_intake.h"
#include "reservation_book.h"
#include "status_views.h"
#include "swap_orders.h"
#include "telemetry.h"
#include "tenant_limits.h"

namespace gshare::arbiter {

class ArbiterImpl final : public Arbiter {
 public:
  ArbiterImpl(ArbiterConfig config, std::vector<GpuInfo> gpus);
  shm::Status Init(bool handle_signals);

  shm::Status Run() override;
  void Stop() override;
  ArbiterStats stats() const override;
  uint64_t epoch() const override { return epoch_; }

 private:
  // ---- loop (arbiter_loop.cc)
  void ArmTimer(uint64_t now_ns);
  void OnSignal();
  void Dispatch(uint64_t tag, uint64_t now_ns);  // one ready descriptor, by its tag
  void BeginShutdown(const char* why);
  void FinishShutdown();
  bool ShutdownComplete(uint64_t now_ns) const;
  void SayGoodbyeToAll(const std::string& reason);
  // Doorbell flooding (DoorbellGuard): a wake-up by client `id`'s doorbell; watching a muted
  // doorbell again once its mute is over (its deadlines_ entry, `e`, came).
  void OnDoorbell(uint32_t id, uint64_t now_ns);
  void UnmuteDoorbell(const DeadlineQueue::Entry& e, uint64_t now_ns);
  void WatchDoorbell(const Client& c, bool watch);

  // ---- timed work (arbiter_deadlines.cc; docs/arbiter.md, "The loop")
  // Brings c's entries in deadlines_ and its place in deferred_ and unissued_ up to date with
  // its state: after every poll of c (PollAll) and wherever the loop changes c after its last
  // poll before sleeping (a grant). Lazy: the entries are checked again when they come.
  void ScheduleDeadlines(Client& c, uint64_t now_ns);
  // c's deadline of `kind` as its state says now (UINT64_MAX: none).
  uint64_t DeadlineOf(const Client& c, DeadlineQueue::Kind kind, uint64_t now_ns) const;
  // Acts on every entry due: unmutes, late swap orders (the client is disconnected), deep
  // evictions; the other kinds only wake the loop.
  void RunDue(uint64_t now_ns);
  // A swap order past OrderDeadlineNs: true if it is late (it has not moved since the arbiter
  // last looked); one that moved gets a later deadline.
  bool OrderIsLate(Client& c, uint64_t now_ns);
  // c is idle past deep_evict_after: its lease is revoked and it is checkpointed.
  void DeepEvict(Client& c, uint64_t now_ns);
  // c's first swap order waits to go out: PumpTransfers visits it.
  void NoteUnissued(const Client& c);
  // The loop's next wake-up: the earliest entry, the policy's wake-up, an MPS daemon's restart.
  uint64_t NextDeadlineNs() const;

  // ---- clients (arbiter_clients.cc)
  // Complete requests from the registration intake.
  void OnArrivals(uint64_t now_ns);
  // Decides an arrival: refused, accepted, or (a re-registration) first sent to the driver
  // worker for the process's state (StartRegistrationQuery) and decided at its completion.
  void Register(Arrival a, uint64_t now_ns);
  // Answers a share query (arbiter_share_query.cc): the share the policy would give the function
  // on the GPU it would register on (a function that could co-run: a marked GPU where it fits,
  // if any), when that GPU is marked for co-running.
  void AnswerShareQuery(Arrival a, uint64_t now_ns);
  // The pipe directory of GPU g's MPS daemon that a share answer names: "" when the arbiter runs
  // no daemon for g, or (with a warning) when the directory cannot travel in the answer.
  std::string AnswerablePipeDir(GpuIndex g) const;
  // The uids of GPU g's MPS clients, orphans included (one user per MPS server).
  std::vector<uid_t> MpsUids(GpuIndex g) const;
  // A GPU marked for co-running, undrained, whose server may serve peer's uid and where its
  // quota and MPS context fit beside the pins (the one with most memory left to promise), if any.
  std::optional<GpuIndex> CorunGpuWithRoom(const shm::PeerCredentials& peer, uint64_t quota,
                                           uint64_t context, uint64_t now_ns) const;
  // Why a share for `quota` bytes, whose MPS context takes `context` bytes, on GPU index g must
  // not be answered to `pid` now: it would not fit beside what the GPU's MPS clients
  // (registered, orphaned, promised to other processes) pin there — their contexts, and their
  // quotas unless mps_swaps_verified lets MPS clients be parked. "" when it fits.
  // What GPU index g's MPS clients pin (registered, orphaned, and promised to other processes
  // than `except`); the largest swappable vGPU there (registered or promised) in
  // *largest_swappable when given.
  uint64_t PinnedBytes(GpuIndex g, pid_t except, uint64_t now_ns,
                       uint64_t* largest_swappable = nullptr) const;
  std::string PinnedRoomRefusal(GpuIndex g, uint64_t quota, uint64_t context, pid_t pid,
                                uint64_t now_ns) const;
  // `driver_state`: the process's state as the driver worker found it (and thawed it), for
  // re-registrations; kNoAnswer when not asked.
  void FinishRegistration(Arrival a, int driver_state, uint64_t now_ns);
  // The steps of FinishRegistration: the GPU a registration goes to; where its memory starts
  // (reserved, out, or ordered off the GPU first); the reply and the client's descriptors in the
  // epoll set (false: the connection failed, nothing of it is kept); the client in the arbiter's
  // tables, the event ring and the policy.
  // What a registering process claims about its memory, once checked (docs/architecture.md,
  // "Residency across the layers").
  enum class RegistrationClaim : uint8_t {
    kFresh,
    kSwappedOut,
    kBelievedResident,
    kDisbelievedResident
  };
  // pid, now_ns: an MPS client's registration goes to the GPU its share was answered for
  // (pid 0: a share query, which is answered for the GPU chosen as for any new vGPU).
  // view: the GPUs the process sees (a confined one goes to one of them).
  GpuIndex RegistrationGpu(const shm::RegisterRequest& req, pid_t pid = 0,
                           uint64_t now_ns = 0, const DeviceView& view = {}) const;
  // The process's devices matched with the managed GPUs (a.view), and a current_gpu given as
  // its device index made an ordinal; false (refused, with the reason) when it sees none of
  // them or its memory is on a device that is not one.
  bool ResolveView(Arrival& a);
  void PlaceAtRegistration(Client& c, RegistrationClaim r, uint64_t now_ns);
  bool ConnectClient(Client& c, Arrival& a, uint64_t now_ns);
  void Admit(std::unique_ptr<Client> c, bool reregister, uint64_t now_ns);
  void Refuse(Arrival& a, const std::string& why, uint64_t* counter = nullptr);
  // `groups`: the peer's primary and supplementary groups (PeerOf), matched against allowed_gids.
  std::string Validate(const shm::RegisterRequest& req, const shm::PeerCredentials& peer,
                       const std::vector<gid_t>& groups) const;
  // Whether a resident claim (a re-registration that says it holds its memory) can be true:
  // right after this arbiter started or from a process with an orphan here, the process's first
  // claim, fitting the GPU, from a process the driver knows as a CUDA process.
  bool BelieveResidentClaim(const Arrival& a, GpuIndex g, int driver_state, uint64_t now_ns,
                            std::string* why);
  // c was disconnected as unenforceable: its uid's back-off (TenantLimits).
  void OnUnenforceable(const Client& c, uint64_t now_ns);
  // The client's registering process exited (its pidfd), whoever holds its connection now.
  void OnClientExit(uint32_t client_id, uint64_t now_ns);
  void OnConnectionEvent(uint32_t client_id, uint64_t now_ns);
  // `reason` is recorded as the kUnregister event's argument.
  void RemoveClient(uint32_t client_id, Unregister reason, uint64_t now_ns);
  // The index of the managed GPU with this ordinal (nullopt: not managed).
  std::optional<GpuIndex> IndexOf(DeviceOrdinal ordinal) const;

  // ---- driver calls off the loop (arbiter_driver.cc)
  bool CanCheckpoint() const { return driver_ && driver_->can_checkpoint() && worker_; }
  uint64_t SubmitJob(JobPurpose purpose, pid_t pid, int pidfd, DriverWorker::Job job);
  void OnDriverCompletions(uint64_t now_ns);
  // Starts enforcement on holder c (lock + checkpoint), deep eviction of idle c, a restore of
  // checkpointed c onto GPU index `to`, or a move of swapped-out c's contexts to `to`.
  void StartEnforce(Client& c, uint64_t now_ns);
  void StartDeepEvict(Client& c, uint64_t now_ns);
  void StartRestore(Client& c, GpuIndex to, uint64_t now_ns);
  void StartMove(Client& c, GpuIndex to, uint64_t now_ns);
  void FinishEnforce(Client& c, const DriverOutcome& o, uint64_t now_ns);
  void FinishDeepEvict(Client& c, const DriverOutcome& o, uint64_t now_ns);
  void FinishRestore(Client& c, const DriverOutcome& o, uint64_t now_ns);
  void FinishMove(Client& c, const DriverOutcome& o, uint64_t now_ns);
  // Enforcement on an MPS client: terminate_client through g's daemon (MpsDaemons::Control),
  // then the client is disconnected as unenforceable (its process keeps running, its CUDA work
  // on the GPU fails); a termination that fails disconnects it the same way.
  void StartTerminate(Client& c, const MpsDaemons::Control& control, uint64_t now_ns);
  void FinishTerminate(Client& c, const DriverOutcome& o, uint64_t now_ns);
  // After a solo burst of a client that reports an MPS share, on a GPU whose daemon the arbiter
  // runs: asks that daemon (off the loop) whether it serves the process; until it does, the
  // share is not believed for co-running (Client::mps_check). "Not served" is asked again after
  // a back-off (1 s doubling to 60 s); one check at a time on the node (a client whose turn did
  // not come is asked after its next solo burst: unconfirmed, it runs alone).
  void CheckMpsClient(Client& c, uint64_t now_ns);
  void FinishMpsClientCheck(Client& c, const DriverOutcome& o, uint64_t now_ns);
  // Revokes holder c's token and disconnects it as unenforceable (its reservation may stay as an
  // orphan: its process lives).
  void DisconnectUnenforceable(Client& c, uint64_t now_ns);
  // Re-registrations: the process's state, thawing it if a previous arbiter left it frozen.
  void StartRegistrationQuery(Arrival a, uint64_t now_ns);
  // A client leaving while checkpointed: its process is thawed by the worker (restored where it
  // was, unlocked); when that restored memory, the reservation is kept as an orphan (if alive).
  void StartThawOfLeaving(const Client& c, Unregister reason, uint64_t now_ns);
  // An orphan made without the driver's word: the worker asks whether the process has CUDA
  // state; if not, the orphan is released (kNoDevice).
  void StartOrphanQuery(uint32_t orphan_id, pid_t pid, int pidfd);

  // ---- invariants (arbiter_invariants.cc): "" when they hold, else the first violation.
  std::string CheckInvariants() const;
  void MaybeCheckInvariants();
  // A transition of c's session (client_session.h): one it refused is a bug of the loop's,
  // logged and counted (invariant_violations) at once, whatever check_invariants says. Returns
  // the command the transition asks for (kNone when refused), for Carry.
  Command Transit(const Client& c, const Transition& transition);
  // Carries out a transition's command on the reservation book.
  void Carry(Client& c, Command command);

  // ---- orphan reservations (arbiter_orphans.cc; invariant 6)
  // Called by RemoveClient for c before its reservation is released: keeps it as an orphan when
  // the arbiter disconnects a live process that holds device memory (DisconnectedAlive, not while
  // stopping). True when an orphan now holds the bytes (c's own reservation is then handed
  // over to the orphan in the book). Whether the process has CUDA state at all is asked of the
  // driver worker afterwards (StartOrphanQuery): an orphan of a process without any is released.
  bool MaybeOrphan(Client& c, Unregister reason, uint64_t now_ns);
  // Keeps `bytes` on GPU `g` reserved for the live process of gone client `client_id`;
  // `reserved`: the bytes are reserved already (a client's reservation handed over), else they
  // are added (a thawed process that holds its memory again). The orphan's id (0: not made).
  uint32_t MakeOrphan(uint32_t client_id, pid_t pid, uid_t uid, const std::string& name,
                      GpuIndex g, uint64_t bytes, Unregister reason, int pidfd, bool reserved,
                      uint64_t now_ns);
  // A registration from `pid`: releases that process's orphans (replaced by the registration's
  // own reservation) and any whose process has exited (the pid was reused). Does not issue
  // waiting transfers (the registration reserves first).
  // True when an orphan of this very process was released (it held memory the arbiter saw).
  bool OnRegistrationFrom(pid_t pid, uint64_t now_ns);
  // An orphan's pidfd became readable: its process exited.
  void OnOrphanEvent(uint32_t orphan_id, uint64_t now_ns);
  void ReleaseOrphan(uint32_t orphan_id, OrphanRelease why, uint64_t now_ns, bool pump);

  // ---- scheduling (arbiter_schedule.cc)
  void Deliver(uint64_t now_ns, policy::EventBody body);
  void Execute(uint64_t now_ns, const policy::ActionList& actions);
  void PollClient(Client& c, uint64_t now_ns);
  // A client that asks for the GPU (`wants`: waiting for a grant or asking to be swapped in) or
  // is in a burst the arbiter has not started, while it has none outstanding: its burst starts
  // (BurstStart to the policy). Asking while a burst is outstanding is that burst.
  void StartBurstIfAsked(Client& c, const shm::ClientView& v, bool wants, uint64_t now_ns);
  void PollAll(uint64_t now_ns);
  void CheckSlices(uint64_t now_ns);
  // UINT64_MAX: no order in flight (SwapOrders::DeadlineNs).
  uint64_t OrderDeadlineNs(const Client& c) const;
  // `corun`: the policy grants c beside g's current holders (a co-run set), which the co-run
  // rules may refuse (answered as a slice that ended: the policy asks again).
  void Grant(Client& c, GpuIndex g, policy::Duration slice_us, uint64_t now_ns,
             bool corun = false);
  // Co-running (corun.h): the rules' view of c; why c may not join g's holders now ("" : it
  // may); a member's burst that ended after `latency_ns`, revoking g's set if it threatens c's
  // SLO (the others are asked to yield).
  CorunMember MemberOf(const Client& c) const;
  // The policy's view of c (FunctionRegistered), and the share class the policy would give it
  // (logged when its process runs at another).
  policy::FunctionSpec SpecOf(const Client& c) const;
  void AdviseShare(Client& c);
  std::string CorunRefusal(const Client& c, GpuIndex g, uint64_t now_ns) const;
  // A co-run burst of c on g ended: revokes the set when co-running threatened its SLO
  // (corun_judge.h).
  void JudgeCorunBurst(Client& c, GpuIndex g, uint64_t latency_ns, uint64_t gpu_time_ns,
                       uint64_t now_ns);
  // Back to exclusive slices on g: the holder that has held longest keeps it, the others are
  // asked to yield.
  void BreakUpSet(GpuIndex g, uint64_t now_ns);
  // Grants each refused co-run grant whose GPU has no holder any more, exclusively.
  void GrantDeferred(uint64_t now_ns);
  // Releases c's hold of its GPU's token (the arbiter's side of a yield or removal).
  void DropHold(Client& c);
  // The MPS daemons: starting them at Init (when mps_control is set), a daemon's exit, restarts.
  shm::Status StartMpsDaemons();
  void OnMpsExit(GpuIndex g, uint64_t now_ns);
  void RestartMpsDaemons(uint64_t now_ns);
  void Preempt(Client& c, uint64_t now_ns);
  void Enforce(Client& c, uint64_t now_ns);  // StartEnforce once no grace is left
  void HintNext(GpuIndex g);
  bool DeepEvictable(const Client& c) const;
  // Whether c is an MPS client, whose memory stays on its GPU (docs/arbiter.md, "Co-running";
  // FunctionSpec::pinned), and `op` may not be done to it: then `what` is refused, counted in
  // mps_pins_refused and logged (a warning the first time for c). A swap-out in place is
  // refused unless the operator set mps_swaps_verified; leaving the GPU always is.
  bool RefusePinned(Client& c, PinnedOp op, std::string_view what);
  // Whether c's memory may be swapped out to make room (MakeRoom): not an MPS client, or
  // mps_swaps_verified.
  bool SwappableInPlace(const Client& c) const {
    return c.mps_share == 0 || config_.corun.mps_swaps_verified;
  }
  void QueueTransfer(Client& c, Transfer t, uint64_t now_ns);
  // Every swap order goes out through here: the channel's order, its bookkeeping, its counter
  // and (`record`; else RecordOrderBegin later) its trace event.
  void IssueOrder(Client& c, Transfer& t, DeviceOrdinal ordinal, uint64_t now_ns, bool record = true);
  void RecordOrderBegin(const Client& c, const Transfer& t, DeviceOrdinal ordinal);
  void PumpTransfers(uint64_t now_ns);
  bool TryIssue(Client& c, uint64_t now_ns);
  void CompleteTransfer(Client& c, const shm::ClientView& v, uint64_t now_ns);
  bool MakeRoom(GpuIndex g, uint64_t need, uint64_t now_ns);
  void Reserve(Client& c, GpuIndex g);
  void Unreserve(Client& c);
  // An MPS client's context memory (MpsContextBytes at its share) on its GPU, from registration
  // until it leaves or is handed to an orphan (docs/arbiter.md, "MPS context memory").
  void ReserveContext(Client& c);
  void ReleaseContext(Client& c);
  // The GPU holding c's reservation, if any (the book's word).
  std::optional<GpuIndex> ReservedOn(const Client& c) const { return book_.ClientGpu(c.id); }
  void Record(shm::EventType type, const Client* c, DeviceOrdinal gpu, uint64_t a0 = 0,
              uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0);
  void RecordFor(shm::EventType type, uint32_t client_id, DeviceOrdinal gpu, uint64_t a0 = 0,
                 uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0);

  // ---- the sole tenant's lease (arbiter_lease.cc; docs/arbiter.md, "The lease")
  // After c released GPU g at the end of a burst with nobody else wanting g: offers c its next
  // grant in advance if nothing is pending for it. True if offered.
  bool MaybeOfferLease(Client& c, GpuIndex g, const shm::ClientView& v, uint64_t now_ns);
  // Top of PollClient: adopts a take of c's lease (re-reading `view`), disconnects a client
  // that scribbled on it, preempts a lease holder the policy did not grant. False: c is gone.
  bool PollLease(Client& c, shm::Result<shm::ClientView>& view, uint64_t now_ns);
  // Withdraws c's offer; a take that won the race is adopted (c then holds its GPU).
  void RevokeLease(Client& c, uint64_t now_ns);
  // Withdraws every offer on GPU g except c's own (someone else may compete for g).
  void RevokeLeasesOn(GpuIndex g, const Client* except, uint64_t now_ns);
  // Before c's burst starts with the policy (c asked the normal way): withdraws c's own stale
  // offer and the offers on c's GPU. False if c took its lease meanwhile (it holds now).
  bool LeaseBeforeBurst(Client& c, uint64_t now_ns);
  // At the top of Grant(c, g): confirms a lease holder's grant, answers a lease burst that
  // already ended, or refuses a grant on a GPU a lease holder took. True: handled.
  bool LeaseBeforeGrant(Client& c, GpuIndex g, policy::Duration slice_us, uint64_t now_ns);
  // c released a grant it took by lease before the policy granted it: no policy event now.
  void ReleaseUnconfirmedLease(Client& c, const shm::ClientView& v, uint64_t now_ns);
  void AdoptLease(Client& c, uint64_t now_ns);

  // ---- /metrics (arbiter_telemetry.cc); the telemetry it shows is counted by Telemetry's hooks
  std::string MetricsText(uint64_t now_ns);

  // ---- control interface (arbiter_control.cc)
  nlohmann::json HandleControl(const nlohmann::json& req, ControlAccess access,
                               const ControlPeer& peer);
  // The read-only views of the state the status, clients and instances commands answer with
  // (status_views.h).
  StatusViews Views() const {
    return StatusViews(clients_.all(), gpus_, book_, orphans_, corun_, mps_, telemetry_);
  }
  nlohmann::json Drain(GpuIndex g, bool drain, uint64_t now_ns);
  nlohmann::json Evict(Client& c, uint64_t now_ns);
  nlohmann::json SetSlo(Client& c, uint32_t slo_ms, uint64_t now_ns);
  void EnforceDrains(uint64_t now_ns);
  void ApplyPendingSlos(uint64_t now_ns);
  // Gives a gone client's policy function id back to the ClientTable: reusable once its
  // FunctionGone has been handled (at once, or at the end of the delivery in progress).
  void ReleaseFid(policy::FunctionId fid);

  ArbiterConfig config_;
  // First among the members: destroyed last, after everything that hands it objects.
  FdReaper reaper_;
  ByGpu<GpuState> gpus_;
  ReservationBook book_;  // memory promised on each GPU (invariants 1, 2, 6)
  CorunBook corun_;       // co-run sets' rules and back-offs (corun.h)
  LeaseBook leases_;      // where the lease offers stand (lease_book.h, arbiter_lease.cc)
  DeadlineQueue deadlines_;  // timed work by client (deadline_queue.h, arbiter_deadlines.cc)
  // Clients that may have a refused co-run grant waiting for its GPU (GrantDeferred), and a
  // first swap order waiting to go out (PumpTransfers): supersets, checked when visited, kept in
  // id order (the order a scan of clients_ had).
  std::set<uint32_t> deferred_;
  std::set<uint32_t> unissued_;
  MpsDaemons mps_;        // the co-run GPUs' private MPS daemons (mps_daemons.h)
  // MPS client checks in flight on the driver worker (CheckMpsClient): at most one, so that
  // however many clients report a share, enforcement jobs never queue behind more than one.
  uint32_t mps_checks_in_flight_ = 0;
  uint64_t epoch_ = 0;
  std::unique_ptr<policy::Policy> policy_;
  std::optional<DriverLib> driver_;
  std::optional<shm::EventRingWriter> ring_;
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<ControlServer> control_;
  Telemetry telemetry_;
  uint64_t started_ns_ = 0;
  bool any_pending_slo_ = false;  // some client has a set-slo waiting (arbiter_control.cc)
  uint64_t metrics_published_ns_ = 0;
  bool metrics_dirty_ = false;  // something may have changed since the last snapshot
  std::unique_ptr<RegistrationIntake> intake_;
  std::unique_ptr<DriverWorker> worker_;
  DriverJobs jobs_;  // what each driver job in flight is for (driver_jobs.h)
  TenantLimits limits_;  // clients per uid and pid, registration rate, back-off
  // Processes that made a resident claim in this epoch (pid -> start time in clock ticks, so a
  // reused pid is a new process), pruned of exited processes as it grows.
  std::map<pid_t, uint64_t> resident_claims_;
  IntakeStats intake_seen_;  // the intake's counters as last folded into stats_
  EventPoller poller_;  // epoll set, timer, Stop()'s wake-up, signals (event_poller.h)

  ClientTable clients_;  // by client id and policy function id (client_table.h)
  std::map<uint32_t, Orphan> orphans_;  // by Orphan::id
  uint32_t next_orphan_id_ = 1;
  std::deque<std::pair<uint64_t, policy::EventBody>> pending_events_;  // completions to deliver
  bool delivering_ = false;
  policy::Time policy_now_ = 0;

  bool stopping_ = false;
  uint64_t stop_deadline_ns_ = 0;
  ArbiterStats stats_;
};

inline constexpr uint64_t kMetricsPeriodNs = 100'000'000;
// Driver calls run on this many worker threads (one operation in flight per client).
inline constexpr unsigned kDriverWorkerThreads = 4;
// At shutdown, how long the arbiter waits each round for driver calls (thaws) to finish.
inline constexpr uint64_t kShutdownDriverWaitNs = 30'000'000'000;

inline constexpr uint64_t kTagSignal = 2ULL << 32;
inline constexpr uint64_t kTagTimer = 3ULL << 32;
inline constexpr uint64_t kTagStop = 4ULL << 32;
inline constexpr uint64_t kTagConn = 5ULL << 32;
inline constexpr uint64_t kTagDoorbell = 6ULL << 32;
inline constexpr uint64_t kTagControl = 7ULL << 32;
inline constexpr uint64_t kTagOrphan = 8ULL << 32;
inline constexpr uint64_t kTagIntake = 9ULL << 32;
inline constexpr uint64_t kTagDriver = 10ULL << 32;
inline constexpr uint64_t kTagClientExit = 11ULL << 32;
inline constexpr uint64_t kTagMps = 12ULL << 32;  // low half: the GPU index of its daemon

uint64_t NowNs();

}  // namespace gshare::arbiter
