// Driver calls about processes, off the loop: enforcement (lock + checkpoint of a holder that
// ignored preemption; MPS's terminate_client for an MPS client), deep eviction of idle vGPUs, restores of checkpointed clients, moves of a
// swapped-out process's contexts to another GPU, thaws (of a re-registering process a previous
// arbiter left frozen, and of a client that leaves while checkpointed) and state queries (of
// orphans). Each is submitted to the DriverWorker bound to the registering process's pidfd and
// finished here when its completion comes back to the loop. A client has at most one such
// operation in flight (Client::op); while it runs the client's channel is not acted on and its
// removal waits (docs/arbiter.md, "Work off the loop").
#include <fcntl.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "gshare/common/units.h"

namespace gshare::arbiter {
namespace {

// DriverOutcome::detail of a move.
constexpr int kMoved = 1;           // restored on the target GPU
constexpr int kNothingToMove = 2;   // no CUDA state: the swap-in alone moves it
constexpr int kLeftCheckpointed = 3;  // neither restore worked: it stays checkpointed
constexpr int kCheckpointFailed = 4;  // lock or checkpoint failed: it runs where it was
constexpr int kRestoredBack = 5;      // the restore on the target failed; restored where it was
// DriverOutcome::detail of a thaw.
constexpr int kRestored = 1;  // it was checkpointed and runs again (holding memory again)
constexpr int kUnlocked = 2;  // it was only locked

// Each command of an MPS termination (server list, client list, terminate_client) gets this long.
constexpr int kMpsControlWaitMs = 3000;

// Restores a frozen process where it was, or unlocks a locked one (on a worker thread).
DriverOutcome Thaw(const DriverLib& driver, const ProcessRef& p) {
  DriverOutcome o;
  if (!Alive(p, &o)) return o;
  o.state = driver.ProcessState(p.pid);
  if (o.state == CU_PROCESS_STATE_CHECKPOINTED) {
    if (!Alive(p, &o)) return o;
    // The same ordinal twice: no GPU pairs, back where it was.
    o.status = driver.RestoreAndUnlock(p.pid, DeviceOrdinal{0}, DeviceOrdinal{0});
    if (o.status.ok()) o.detail = kRestored;
  } else if (o.state == CU_PROCESS_STATE_LOCKED) {
    if (!Alive(p, &o)) return o;
    o.status = driver.Unlock(p.pid);
    if (o.status.ok()) o.detail = kUnlocked;
  }
  return o;
}

void LogThaw(const DriverOutcome& o, pid_t pid, const std::string& name) {
  if (o.detail == 0 && o.status.ok()) return;  // running, gone, unknown: nothing was undone
  const char* what = o.state == CU_PROCESS_STATE_LOCKED ? "locked" : "checkpointed";
  if (!o.status.ok()) {
    spdlog::error("pid {} ('{}') is left {} by a checkpoint and could not be thawed: {}", pid,
                  name, what, o.status.ToString());
    return;
  }
  spdlog::warn("pid {} ('{}') was left {} by a checkpoint; restored and unlocked", pid, name, what);
}

}  // namespace

uint64_t ArbiterImpl::SubmitJob(JobPurpose purpose, pid_t pid, int pidfd, DriverWorker::Job job) {
  const uint64_t id = jobs_.Add(std::move(purpose));
  worker_->Submit(id, RefTo(pid, pidfd), std::move(job));
  return id;
}

void ArbiterImpl::OnDriverCompletions(uint64_t now_ns) {
  if (!worker_) return;
  for (DriverWorker::Completion& done : worker_->TakeCompletions()) {
    const uint64_t job = done.tag;
    const DriverOutcome& o = done.outcome;
    std::optional<JobPurpose> purpose = jobs_.Take(job);
    if (!purpose) continue;
    if (auto* r = std::get_if<RegistrationJob>(&*purpose)) {
      Arrival a = std::move(r->arrival);
      LogThaw(o, a.conn.peer().pid, a.request.function_name);
      if (o.detail == kRestored) ++stats_.restores;
      if (o.status.code() == shm::StatusCode::kClosed) {  // exited meanwhile
        reaper_.Dispose(std::move(a.conn));
        continue;
      }
      // Restored now: a CUDA process running again (its resident claim can be true).
      const int state = o.detail == kRestored ? static_cast<int>(CU_PROCESS_STATE_RUNNING) : o.state;
      FinishRegistration(std::move(a), state, now_ns);
      continue;
    }
    if (auto* t = std::get_if<LeavingThaw>(&*purpose)) {
      LogThaw(o, t->pid, t->name);
      if (o.detail == kRestored) {
        ++stats_.restores;
        // It holds its memory on its GPU again: a live process the arbiter disconnected keeps
        // it reserved (an orphan), unless it is leaving anyway or the arbiter is stopping.
        if (!stopping_ && DisconnectedAlive(t->reason) && !ProcessExited(t->pidfd.get()) &&
            t->pidfd)
          (void)MakeOrphan(t->client_id, t->pid, t->uid, t->name, t->gpu, t->bytes, t->reason,
                           t->pidfd.get(), /*reserved=*/false, now_ns);
      }
      continue;
    }
    if (const auto* q = std::get_if<OrphanQuery>(&*purpose)) {
      const uint32_t orphan = q->orphan_id;
      if (orphans_.count(orphan) != 0 && o.state == DriverLib::kNoCudaState &&
          o.status.ok()) {
        spdlog::info("orphan {}: the driver knows no CUDA state of pid {}: it holds no device "
                     "memory",
                     orphan, orphans_.at(orphan).pid);
        ReleaseOrphan(orphan, OrphanRelease::kNoDevice, now_ns, /*pump=*/true);
      }
      continue;
    }
    if (const auto* m = std::get_if<MpsClientCheck>(&*purpose)) {
      --mps_checks_in_flight_;
      if (Client* c = clients_.Find(m->client_id); c != nullptr) FinishMpsClientCheck(*c, o, now_ns);
      continue;
    }
    const uint32_t id = std::get<ClientJob>(*purpose).client_id;
    Client* c = clients_.Find(id);
    if (c == nullptr || c->session.op_job() != job) continue;
    const DriverOp op = c->session.OpEnded();
    switch (op) {
      case DriverOp::kEnforcing:
        FinishEnforce(*c, o, now_ns);
        break;
      case DriverOp::kDeepEvicting:
        FinishDeepEvict(*c, o, now_ns);
        break;
      case DriverOp::kRestoring:
        FinishRestore(*c, o, now_ns);
        break;
      case DriverOp::kMoving:
        FinishMove(*c, o, now_ns);
        break;
      case DriverOp::kTerminating:
        FinishTerminate(*c, o, now_ns);
        break;
      case DriverOp::kNone:
        break;
    }
    // A removal that waited for the operation happens now (unless it left already).
    if (Client* left = clients_.Find(id);
        left != nullptr && left->removal_pending && left->session.op() == DriverOp::kNone) {
      const Unregister reason = *left->removal_pending;
      left->removal_pending.reset();
      RemoveClient(id, reason, now_ns);
    }
  }
  PumpTransfers(now_ns);
}

// ---- enforcement

void ArbiterImpl::Enforce(Client& c, uint64_t now_ns) {
  if (c.session.op() != DriverOp::kNone) return;  // already being enforced on (or otherwise busy)
  const DeviceOrdinal ordinal = gpus_[c.session.hold_gpu()].ordinal;
  if (c.mps_share != 0) {
    // An MPS client is never checkpointed (unverified for MPS clients); MPS's own safe
    // termination stops it, through the daemon the arbiter runs for its GPU.
    const auto control = mps_.ControlFor(c.session.hold_gpu());
    if (control && worker_) {
      // Bounded per uid (mps_terminations_per_uid): a tenant whose processes keep ignoring
      // preemption does not make the arbiter hammer the GPU's daemon. Past the cap the client
      // is disconnected as unenforceable with no daemon command (its token revoked, its uid
      // backed off as for any unenforceable holder).
      if (std::string why; !limits_.AllowMpsTermination(c.uid, now_ns, &why)) {
        ++stats_.mps_terminations_capped;
        spdlog::error("client {} '{}' (pid {}, an MPS client) ignored preemption on GPU {}: {}; "
                      "disconnecting it as unenforceable without terminating it through MPS",
                      c.id, c.name, c.pid, ordinal, why);
        return DisconnectUnenforceable(c, now_ns);
      }
      return StartTerminate(c, *control, now_ns);
    }
    if (!c.enforce_warned)
      spdlog::warn("client {} '{}' (an MPS client) has not yielded GPU {} {} ms after "
                   "preemption; the arbiter runs no MPS daemon for that GPU to terminate it with",
                   c.id, c.name, ordinal, (now_ns - c.preempt_ns) / 1'000'000);
    c.enforce_warned = true;
    return;
  }
  if (!CanCheckpoint()) {
    if (!c.enforce_warned)
      spdlog::warn("client {} '{}' has not yielded GPU {} {} ms after preemption; no checkpoint "
                   "API to enforce with",
                   c.id, c.name, ordinal, (now_ns - c.preempt_ns) / 1'000'000);
    c.enforce_warned = true;
    return;
  }
  StartEnforce(c, now_ns);
}

void ArbiterImpl::StartEnforce(Client& c, uint64_t now_ns) {
  spdlog::warn("client {} '{}' (pid {}) ignored preemption on GPU {}: locking and checkpointing",
               c.id, c.name, c.pid, gpus_[c.session.hold_gpu()].ordinal);
  const auto grace_ms = static_cast<unsigned>(
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.preempt_grace).count());
  const DriverLib driver = *driver_;
  const uint64_t job =
      SubmitJob(ClientJob{c.id}, c.pid, c.conn.pidfd(), [driver, grace_ms](const ProcessRef& p) {
        DriverOutcome o;
        if (Alive(p, &o)) o.status = driver.LockAndCheckpoint(p.pid, std::max(1U, grace_ms));
        return o;
      });
  Transit(c, c.session.OpStarted(DriverOp::kEnforcing, job));
  (void)now_ns;
}

void ArbiterImpl::StartTerminate(Client& c, const MpsDaemons::Control& control, uint64_t now_ns) {
  spdlog::warn(
      "client {} '{}' (pid {}, an MPS client) ignored preemption on GPU {}: terminating "
      "its CUDA work through the MPS daemon (terminate_client)",
      c.id, c.name, c.pid, gpus_[c.session.hold_gpu()].ordinal);
  const uint64_t job = SubmitJob(ClientJob{c.id}, c.pid, c.conn.pidfd(), [control](const ProcessRef& p) {
    DriverOutcome o;
    if (Alive(p, &o)) o.status = control.TerminateClient(p.pid, kMpsControlWaitMs);
    return o;
  });
  Transit(c, c.session.OpStarted(DriverOp::kTerminating, job));
  (void)now_ns;
}

void ArbiterImpl::CheckMpsClient(Client& c, uint64_t now_ns) {
  if (c.mps_share == 0 || !worker_ || c.mps_check == Client::MpsCheck::kServed ||
      c.mps_check == Client::MpsCheck::kChecking || now_ns < c.mps_check_after_ns ||
      mps_checks_in_flight_ != 0)  // asked again after its next solo burst
    return;
  const auto control = mps_.ControlFor(c.session.gpu());
  if (!control) return;  // not the arbiter's daemon: the report is all there is
  c.mps_check = Client::MpsCheck::kChecking;
  ++mps_checks_in_flight_;
  (void)SubmitJob(MpsClientCheck{c.id}, c.pid, c.conn.pidfd(), [control = *control](const ProcessRef& p) {
    DriverOutcome o;
    if (!Alive(p, &o)) return o;
    auto server = control.ServerOf(p.pid, kMpsControlWaitMs);
    if (!server.ok()) {
      o.status = server.status();
    } else {
      o.detail = *server != 0 ? 1 : 0;
    }
    return o;
  });
}

void ArbiterImpl::FinishMpsClientCheck(Client& c, const DriverOutcome& o, uint64_t now_ns) {
  constexpr uint64_t kFirstNs = 1'000'000'000, kMaxNs = 60'000'000'000;
  const DeviceOrdinal ordinal = gpus_[c.session.gpu()].ordinal;
  if (!o.status.ok()) {  // its process exited (removed elsewhere), or the daemon did not answer
    c.mps_check = Client::MpsCheck::kUnchecked;
    c.mps_check_after_ns = now_ns + kFirstNs;
    spdlog::debug("client {} '{}': whether GPU {}'s MPS daemon serves it is not known yet: {}",
                  c.id, c.name, ordinal, o.status.ToString());
    return;
  }
  if (o.detail == 1) {
    c.mps_check = Client::MpsCheck::kServed;
    spdlog::info("client {} '{}' (pid {}): GPU {}'s MPS daemon serves it (its {}% share confirmed)",
                 c.id, c.name, c.pid, ordinal, c.mps_share);
    return;
  }
  const bool first = c.mps_check_backoff_ns == 0;
  c.mps_check = Client::MpsCheck::kNotServed;
  c.mps_check_backoff_ns = first ? kFirstNs : std::min(kMaxNs, 2 * c.mps_check_backoff_ns);
  c.mps_check_after_ns = now_ns + c.mps_check_backoff_ns;
  if (!first) return;
  ++stats_.mps_clients_unserved;
  spdlog::warn("client {} '{}' (pid {}) reports an MPS share of {}%, but GPU {}'s MPS daemon does "
               "not serve its process (a client of another daemon, or a false report): it co-runs "
               "with nobody until the daemon does",
               c.id, c.name, c.pid, c.mps_share, ordinal);
}

void ArbiterImpl::FinishTerminate(Client& c, const DriverOutcome& o, uint64_t now_ns) {
  if (o.status.code() == shm::StatusCode::kClosed) {  // its process exited meanwhile
    RemoveClient(c.id, c.removal_pending.value_or(Unregister::kDied), now_ns);
    return;
  }
  if (o.status.ok()) {
    ++stats_.mps_terminations;
    spdlog::warn(
        "client {} '{}' (pid {}): its CUDA work on GPU {} was terminated by MPS; "
        "disconnecting it",
        c.id, c.name, c.pid, gpus_[c.session.hold_gpu()].ordinal);
  } else {
    spdlog::error("client {} '{}' (pid {}): MPS termination failed ({}); revoking its token and "
                  "disconnecting it",
                  c.id, c.name, c.pid, o.status.ToString());
  }
  DisconnectUnenforceable(c, now_ns);
}

void ArbiterImpl::DisconnectUnenforceable(Client& c, uint64_t now_ns) {
  Record(shm::EventType::kRevoke, &c, gpus_[c.session.hold_gpu()].ordinal, c.chan.grant_seq(), 0);
  c.chan.Revoke();
  ++stats_.unenforceable;
  c.removal_pending.reset();
  RemoveClient(c.id, Unregister::kUnenforceable, now_ns);
}

void ArbiterImpl::FinishEnforce(Client& c, const DriverOutcome& o, uint64_t now_ns) {
  const GpuIndex g = c.session.hold_gpu();
  const DeviceOrdinal ordinal = gpus_[g].ordinal;
  if (o.status.code() == shm::StatusCode::kClosed) {  // its process exited meanwhile
    RemoveClient(c.id, c.removal_pending.value_or(Unregister::kDied), now_ns);
    return;
  }
  if (o.status.code() == shm::StatusCode::kTimeout) {
    // Its work is still running (a long kernel): try again after another grace period.
    spdlog::warn("client {}: enforcement timed out: {}; retrying", c.id, o.status.ToString());
    c.preempt_ns = now_ns;
    return;
  }
  if (!o.status.ok()) {
    // The holder neither yields nor can be stopped: revoke its token and disconnect it (its
    // reservation is reclaimed) so the GPU is not held forever. See docs/security.md.
    spdlog::error("client {} '{}' (pid {}): enforcement failed ({}); revoking its token and "
                  "disconnecting it",
                  c.id, c.name, c.pid, o.status.ToString());
    DisconnectUnenforceable(c, now_ns);
    return;
  }
  ++stats_.enforcements;
  Record(shm::EventType::kCheckpoint, &c, ordinal, 0, ordinal.value());
  Record(shm::EventType::kRevoke, &c, ordinal, c.chan.grant_seq(), 1);
  c.chan.Revoke();
  if (c.session.holding()) {
    telemetry_.Released(c.tel, HoldEnded(c, g, ordinal, now_ns, false, now_ns));
    DropHold(c);
    c.preempt_sent = false;
  }
  Carry(c, Transit(c, c.session.Checkpointed()));  // the driver holds its memory now
  // A lease holder the policy never granted gets no SliceExpired (its burst is still queued).
  if (!c.lease.Confirm()) Deliver(now_ns, policy::SliceExpired{c.fid, ToPolicy(g)});
}

// ---- deep eviction

void ArbiterImpl::StartDeepEvict(Client& c, uint64_t now_ns) {
  const DriverLib driver = *driver_;
  const uint64_t job = SubmitJob(ClientJob{c.id}, c.pid, c.conn.pidfd(), [driver](const ProcessRef& p) {
    DriverOutcome o;
    if (Alive(p, &o)) o.status = driver.LockAndCheckpoint(p.pid, 1000);
    return o;
  });
  Transit(c, c.session.OpStarted(DriverOp::kDeepEvicting, job));
  (void)now_ns;
}

void ArbiterImpl::FinishDeepEvict(Client& c, const DriverOutcome& o, uint64_t now_ns) {
  if (o.status.code() == shm::StatusCode::kClosed) {
    RemoveClient(c.id, c.removal_pending.value_or(Unregister::kDied), now_ns);
    return;
  }
  if (!o.status.ok()) {
    spdlog::warn("client {} '{}': deep eviction failed: {}", c.id, c.name, o.status.ToString());
    c.last_use_ns = now_ns;  // retry after another idle period
    return;
  }
  const DeviceOrdinal ordinal = gpus_[c.session.gpu()].ordinal;
  spdlog::info("client {} '{}' idle for {} ms: checkpointed (deep eviction)", c.id, c.name,
               (now_ns - c.last_use_ns) / 1'000'000);
  ++stats_.deep_evictions;
  Record(shm::EventType::kCheckpoint, &c, ordinal, 0, ordinal.value());
  c.shadow = false;
  Carry(c, Transit(c, c.session.Checkpointed()));  // the driver holds its memory now
}

// ---- restore of a checkpointed client (TryIssue: its swap-in target is reserved already)

void ArbiterImpl::StartRestore(Client& c, GpuIndex to, uint64_t now_ns) {
  const DeviceOrdinal from = gpus_[c.session.gpu()].ordinal;
  const DeviceOrdinal target = gpus_[to].ordinal;
  if (!driver_) return;
  const DriverLib driver = *driver_;
  const uint64_t job =
      SubmitJob(ClientJob{c.id}, c.pid, c.conn.pidfd(), [driver, from, target](const ProcessRef& p) {
        DriverOutcome o;
        if (Alive(p, &o)) o.status = driver.RestoreAndUnlock(p.pid, from, target);
        return o;
      });
  Transit(c, c.session.OpStarted(DriverOp::kRestoring, job, to));
  (void)now_ns;
}

void ArbiterImpl::FinishRestore(Client& c, const DriverOutcome& o, uint64_t now_ns) {
  const GpuIndex to = c.session.op_target();
  const DeviceOrdinal ordinal = gpus_[to].ordinal;
  if (o.status.code() == shm::StatusCode::kClosed) {
    Unreserve(c);
    RemoveClient(c.id, c.removal_pending.value_or(Unregister::kDied), now_ns);
    return;
  }
  if (!o.status.ok()) {
    spdlog::error("client {}: restore failed: {}", c.id, o.status.ToString());
    Unreserve(c);
    const uint64_t backoff = c.transfers.Failed();
    if (!c.transfers.empty()) c.transfers.front().not_before_ns = now_ns + backoff;
    return;
  }
  ++stats_.restores;
  Record(shm::EventType::kCheckpoint, &c, ordinal, 1, ordinal.value());
  spdlog::info("client {} '{}' restored onto GPU {}", c.id, c.name, ordinal);
  Transit(c, c.session.Restored(to));
  c.transfers.Succeeded();
  if (!c.removal_pending) (void)TryIssue(c, now_ns);  // now resident on the target: completes at once
}

// ---- moving a swapped-out function's contexts to another GPU
//
// A swapped-out function placed on another GPU: its CUDA contexts (and modules, streams, any
// memory the shim does not manage) are bound to the GPU it left, so the shim's swap-in alone
// would leave its kernels on the old GPU reaching memory on the new one. The driver's process
// checkpoint moves them: lock, checkpoint, restore with the GPU pair (old -> new), unlock; the
// swap-in order then brings the vGPU's memory onto the new GPU (docs/multi-gpu.md). A process
// the driver does not know (no CUDA state, e.g. a test's fake function) or an arbiter without
// the checkpoint API moves by the swap-in alone.

void ArbiterImpl::StartMove(Client& c, GpuIndex to, uint64_t now_ns) {
  const DeviceOrdinal from = gpus_[c.session.gpu()].ordinal;
  const DeviceOrdinal target = gpus_[to].ordinal;
  const auto grace_ms = static_cast<unsigned>(
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.preempt_grace).count());
  const DriverLib driver = *driver_;
  const uint64_t job =
      SubmitJob(ClientJob{c.id}, c.pid, c.conn.pidfd(), [driver, from, target, grace_ms](const ProcessRef& p) {
        DriverOutcome o;
        if (!Alive(p, &o)) return o;
        o.state = driver.ProcessState(p.pid);
        if (o.state == DriverLib::kNoCudaState) {
          o.detail = kNothingToMove;
          return o;
        }
        if (o.state == DriverLib::kNoAnswer) {  // a CUDA process that cannot answer cannot move now
          o.status =
              shm::Status(shm::StatusCode::kTimeout, "the driver does not answer for the process");
          return o;
        }
        if (!Alive(p, &o)) return o;
        o.status = driver.LockAndCheckpoint(p.pid, std::max(1U, grace_ms));
        if (!o.status.ok()) {
          o.detail = kCheckpointFailed;
          return o;
        }
        o.status = driver.RestoreAndUnlock(p.pid, from, target);
        if (o.status.ok()) {
          o.detail = kMoved;
          return o;
        }
        // Restored where it was instead; if even that fails it stays checkpointed (restored
        // wherever the policy places it next, or thawed when its client leaves).
        o.detail =
            driver.RestoreAndUnlock(p.pid, from, from).ok() ? kRestoredBack : kLeftCheckpointed;
        return o;
      });
  Transit(c, c.session.OpStarted(DriverOp::kMoving, job, to));
  (void)now_ns;
}

void ArbiterImpl::FinishMove(Client& c, const DriverOutcome& o, uint64_t now_ns) {
  const GpuIndex to = c.session.op_target();
  const auto from_ordinal = gpus_[c.session.gpu()].ordinal;
  const auto to_ordinal = gpus_[to].ordinal;
  if (o.status.code() == shm::StatusCode::kClosed) {
    RemoveClient(c.id, c.removal_pending.value_or(Unregister::kDied), now_ns);
    return;
  }
  if (o.detail == kMoved || o.detail == kNothingToMove) {
    if (!c.transfers.empty()) c.transfers.front().contexts_moved = true;
    if (o.detail == kMoved) {
      ++stats_.context_moves;
      // In the event ring as a restore onto the new GPU (the checkpoint event's "restored" form).
      Record(shm::EventType::kCheckpoint, &c, to_ordinal, 1, to_ordinal.value());
      spdlog::info("client {} '{}': contexts moved from GPU {} to GPU {} in {} us", c.id, c.name,
                   from_ordinal, to_ordinal, o.duration_ns / 1000);
      Transit(c, c.session.MovedTo(to));
    }
    if (!c.removal_pending) (void)TryIssue(c, now_ns);  // the swap-in order goes out now
    return;
  }
  if (o.detail == kLeftCheckpointed) {
    spdlog::error("client {} '{}': restore onto GPU {} failed ({}) and so did the restore on GPU "
                  "{}: it stays checkpointed",
                  c.id, c.name, to_ordinal, o.status.ToString(), from_ordinal);
    Carry(c, Transit(c, c.session.Checkpointed()));
  } else if (o.detail == kRestoredBack) {
    spdlog::error("client {} '{}': restore onto GPU {} failed ({}); restored it on GPU {}", c.id,
                  c.name, to_ordinal, o.status.ToString(), from_ordinal);
  } else if (o.detail == kCheckpointFailed) {
    spdlog::warn("client {} '{}': moving its contexts from GPU {} to GPU {} failed at the "
                 "checkpoint ({}); it stays on GPU {}",
                 c.id, c.name, from_ordinal, to_ordinal, o.status.ToString(), from_ordinal);
  } else {
    spdlog::warn("client {} '{}': the driver does not answer for pid {}: not moved now ({})", c.id,
                 c.name, c.pid, o.status.ToString());
  }
  if (c.removal_pending || c.transfers.empty()) return;
  // The function stays swapped out where its contexts are (never frozen): answered as a failed
  // swap-in (retried with back-off when a grant waits for it).
  shm::ClientView failed;
  failed.ack_status = shm::SwapAckStatus::kFailed;
  CompleteTransfer(c, failed, now_ns);
}

// ---- registrations, leaving clients, orphans

void ArbiterImpl::StartRegistrationQuery(Arrival a, uint64_t now_ns) {
  const shm::PeerCredentials peer = a.conn.peer();
  // One registration of a process (two of a uid) waits for the driver at a time: a stopped
  // registrant holds a worker only as long as its one query's timeout.
  uint32_t same_uid = 0;
  for (const Arrival* waiting : jobs_.Registrations()) {
    const shm::PeerCredentials& other = waiting->conn.peer();
    if (other.pid == peer.pid)
      return Refuse(a, "a registration of pid " + std::to_string(peer.pid) +
                           " is being decided already", &stats_.refusals_limit);
    same_uid += other.uid == peer.uid ? 1 : 0;
  }
  if (same_uid >= 2)
    return Refuse(a, "uid " + std::to_string(peer.uid) + " has registrations being decided already",
                  &stats_.refusals_limit);
  const DriverLib driver = *driver_;
  const int pidfd = a.conn.pidfd();
  // The arrival (its connection owns `pidfd`) waits in the job's purpose until the completion.
  SubmitJob(RegistrationJob{std::move(a)}, peer.pid, pidfd,
            [driver](const ProcessRef& p) { return Thaw(driver, p); });
  (void)now_ns;
}

void ArbiterImpl::StartThawOfLeaving(const Client& c, Unregister reason, uint64_t now_ns) {
  if (!driver_ || !worker_ || c.pid <= 0) return;
  LeavingThaw t;
  t.client_id = c.id;
  t.pid = c.pid;
  t.uid = c.uid;
  t.name = c.name;
  t.gpu = c.session.gpu();
  t.bytes = c.quota;
  t.reason = reason;
  if (c.conn.pidfd() >= 0) t.pidfd.Reset(::fcntl(c.conn.pidfd(), F_DUPFD_CLOEXEC, 0));
  const DriverLib driver = *driver_;
  SubmitJob(std::move(t), c.pid, c.conn.pidfd(),
            [driver](const ProcessRef& p) { return Thaw(driver, p); });
  (void)now_ns;
}

void ArbiterImpl::StartOrphanQuery(uint32_t orphan_id, pid_t pid, int pidfd) {
  const DriverLib driver = *driver_;
  SubmitJob(OrphanQuery{orphan_id}, pid, pidfd, [driver](const ProcessRef& p) {
    DriverOutcome o;
    if (Alive(p, &o)) o.state = driver.ProcessState(p.pid);
    return o;
  });
}

}  // namespace gshare::arbiter
