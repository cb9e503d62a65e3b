// The policy adapter: turns what clients write in their channels into policy events (burst
// start, burst end, slice expired, swap done), and the policy's actions into grants,
// preemptions and swap orders, while keeping the arbiter's own truth about residency and
// memory reservations (see the invariants in arbiter_impl.h and docs/arbiter.md).
//
// Where the policy's model and the live node differ, this file bridges them:
//  - the policy believes a newly registered function is on the host; the live client may
//    already be resident (fresh, or re-registered after an arbiter restart). Such a client is
//    a "shadow" resident: the registration tells the policy where (state_on, a placement hint),
//    the policy's swap-in completes at once, and the adapter itself swaps shadow residents out
//    (cheapest bytes per idle second first) when a swap-in needs their memory;
//  - the policy frees memory when it issues a swap-out; the arbiter frees the reservation only
//    when the client acknowledges it, so a swap-in waits for room (never overshooting);
//  - the policy's grant slice is advisory: the arbiter asks the holder to yield at the end of
//    its slice only when another client waits, and enforces after the preemption grace;
//  - an MPS client is pinned to its GPU (FunctionSpec::pinned, with its GPU as state_on): the
//    policy never orders it out or elsewhere, and TryIssue refuses any order that would
//    (RefusePinned), whoever asked; MakeRoom never picks it. With mps_swaps_verified it is
//    pinned_parkable: swap-outs in place (and swap-ins back onto its GPU) are allowed, the
//    policy and MakeRoom may take it as a victim, moves and deep evictions stay refused.
#include <algorithm>
#include <cmath>
#include <utility>
#include <variant>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "gshare/common/units.h"
#include "gshare/shm/spin.h"
#include "room_choice.h"

namespace gshare::arbiter {
namespace {

policy::Duration ToUs(uint64_t ns) { return static_cast<policy::Duration>(ns / 1000); }

// How long the arbiter spins for a draining holder's release, and how long it lets the
// next-in-line client spin for its grant, before both fall back to sleeping.
constexpr uint64_t kReleaseSpinNs = 200'000;
constexpr uint32_t kNextSpinNs = 500'000;

// Whether some client with an outstanding burst waits for GPU g's token: resident there, or
// being made resident there (a swap-in or a grant pending on g). A client waiting for another
// GPU is no reason to cut g's holder short.
bool SomeoneWaitsFor(const ClientMap& clients, GpuIndex g) {
  for (const auto& [id, c] : clients) {
    if (!c->burst_outstanding || c->session.holding()) continue;
    if (c->session.where() == Where::kResident && c->session.gpu() == g && c->transfers.empty())
      return true;
    // Checkpointed (enforcement, deep eviction) with a request: it is restored where the policy
    // grants it, its last GPU until told otherwise. Not counting it let a holder that never goes
    // idle keep that GPU forever (tests/fault ArbiterKilledWhileAFunctionIsCheckpointed).
    if (c->session.where() == Where::kCheckpointed && c->session.gpu() == g) return true;
    if (c->pending_grant && c->pending_grant->first == g) return true;
    if (c->transfers.HasSwapInTo(g)) return true;
  }
  return false;
}

// Whether no other vGPU the policy keeps on c's GPU (resident, not a lazily kept shadow) or
// waiting for it could compete with c for the token.
bool SoleTenant(const ClientMap& clients, const Client& c) {
  for (const auto& [id, o] : clients)
    if (o.get() != &c && o->session.where() == Where::kResident &&
        o->session.gpu() == c.session.gpu() && !o->shadow)
      return false;
  return !SomeoneWaitsFor(clients, c.session.gpu());
}

}  // namespace

void ArbiterImpl::Record(shm::EventType type, const Client* c, DeviceOrdinal gpu, uint64_t a0,
                         uint64_t a1, uint64_t a2, uint64_t a3) {
  RecordFor(type, c != nullptr ? c->id : 0, gpu, a0, a1, a2, a3);
}

void ArbiterImpl::RecordFor(shm::EventType type, uint32_t client_id, DeviceOrdinal gpu, uint64_t a0,
                            uint64_t a1, uint64_t a2, uint64_t a3) {
  if (!ring_) return;
  shm::Event e;
  e.timestamp_ns = NowNs();
  e.type = type;
  e.client_id = client_id;
  e.gpu = gpu.value();
  e.args = {a0, a1, a2, a3};
  ring_->Append(e);
}

void ArbiterImpl::Deliver(uint64_t now_ns, policy::EventBody body) {
  // A registering client may already be resident (a shadow: the policy believes it is on the
  // host): tell the policy where, so its first placement does not move the vGPU for nothing.
  if (auto* reg = std::get_if<policy::FunctionRegistered>(&body)) {
    const Client* c = clients_.ByFunction(reg->function);
    if (c != nullptr && c->Stays()) {
      // Pinned: bound to its GPU's MPS server or to the GPUs it sees, resident or not.
      reg->state_on = ToPolicy(c->session.gpu());
    } else if (c != nullptr && c->session.where() == Where::kResident && c->shadow &&
               ReservedOn(*c) && c->transfers.empty()) {
      reg->state_on = ToPolicy(*ReservedOn(*c));
    }
  }
  pending_events_.emplace_back(now_ns, std::move(body));
  if (delivering_) return;
  delivering_ = true;
  policy::ActionList actions;
  while (!pending_events_.empty()) {
    auto [at, ev] = std::move(pending_events_.front());
    pending_events_.pop_front();
    policy_now_ = std::max(policy_now_, static_cast<policy::Time>(at / 1000));
    actions.clear();
    policy_->Handle(policy::Event{policy_now_, std::move(ev)}, actions);
    Execute(at, actions);
  }
  delivering_ = false;
  // Function ids whose FunctionGone the policy has handled may be given out again.
  clients_.Recycle();
}

void ArbiterImpl::Execute(uint64_t now_ns, const policy::ActionList& actions) {
  for (const policy::Action& a : actions) {
    Client* c = a.function == policy::kNoFunction ? nullptr : clients_.ByFunction(a.function);
    switch (a.kind) {
      case policy::ActionKind::kActivateGpu:
      case policy::ActionKind::kKeepResident:
        spdlog::debug("policy: {} gpu {} fn {}", policy::ActionKindName(a.kind), a.gpu, a.function);
        break;
      case policy::ActionKind::kReleaseGpu:
        // Nothing of the policy's model is left on the GPU: lazily kept shadows leave it too.
        spdlog::debug("policy: release gpu {}", a.gpu);
        for (auto& [id, other] : clients_) {
          if (other->shadow && other->session.where() == Where::kResident &&
              other->session.gpu() == FromPolicy(a.gpu) && !other->session.holding() &&
              other->transfers.empty())
            QueueTransfer(*other, {shm::SwapOp::kSwapOut, FromPolicy(a.gpu), false, policy::SwapKind::kOut}, now_ns);
        }
        break;
      case policy::ActionKind::kSwapIn:
        if (c != nullptr) QueueTransfer(*c, {shm::SwapOp::kSwapIn, FromPolicy(a.gpu), true, policy::SwapKind::kIn}, now_ns);
        break;
      case policy::ActionKind::kSwapOut:
      case policy::ActionKind::kDeepEvict: {
        if (c == nullptr) break;
        const policy::SwapKind kind = a.kind == policy::ActionKind::kSwapOut
                                          ? policy::SwapKind::kOut
                                          : policy::SwapKind::kDeepEvict;
        const bool out = kind == policy::SwapKind::kOut;
        if (c->session.where() == Where::kResident &&
            RefusePinned(*c, out ? PinnedOp::kSwapInPlace : PinnedOp::kOffItsGpu,
                         out ? "the policy's swap-out" : "the policy's deep eviction")) {
          // Answered as a swap-out that failed: it stays resident, the policy believes it off.
          c->shadow = true;
          Deliver(now_ns, policy::SwapDone{c->fid, ToPolicy(c->session.gpu()), kind, 0, 0});
        } else if (c->session.where() == Where::kResident && !c->session.holding() &&
                   c->transfers.empty() && ReservedOn(*c) == c->session.gpu() &&
                   !gpus_[c->session.gpu()].drained) {
          // Lazy: the policy's model frees the memory now; the vGPU stays resident as a shadow
          // and is swapped out only when a swap-in needs its memory (MakeRoom), so a function
          // the policy brings back before that costs no copy at all.
          c->shadow = true;
          spdlog::debug("client {}: policy {} kept resident as a shadow on GPU {}", c->id,
                        policy::ActionKindName(a.kind), gpus_[c->session.gpu()].ordinal);
          Deliver(now_ns, policy::SwapDone{c->fid, ToPolicy(c->session.gpu()), kind, 0, 0});
        } else {
          QueueTransfer(*c, {shm::SwapOp::kSwapOut, c->session.gpu(), true, kind}, now_ns);
        }
        break;
      }
      case policy::ActionKind::kGrant:
        if (c != nullptr) Grant(*c, FromPolicy(a.gpu), a.slice, now_ns, a.corun);
        break;
      case policy::ActionKind::kPreempt:
        if (c != nullptr) Preempt(*c, now_ns);
        break;
    }
    if (c == nullptr && a.function != policy::kNoFunction)
      spdlog::debug("policy: {} for function {} that is gone", policy::ActionKindName(a.kind),
                    a.function);
  }
}

void ArbiterImpl::Reserve(Client& c, GpuIndex g) {
  if (!book_.ReserveClient(c.id, g, c.quota)) return;  // it has one already
  Record(shm::EventType::kReservation, &c, gpus_[g].ordinal, book_.reserved(g), c.quota);
}

void ArbiterImpl::Unreserve(Client& c) {
  const auto g = ReservedOn(c);
  if (!g || !book_.ReleaseClient(c.id)) return;
  Record(shm::EventType::kReservation, &c, gpus_[*g].ordinal, book_.reserved(*g), 0);
}

void ArbiterImpl::ReserveContext(Client& c) {
  const uint64_t bytes = MpsContextBytes(config_.corun, c.mps_share);
  const GpuIndex g = c.session.gpu();
  if (bytes == 0 || !book_.ReserveContext(c.id, g, bytes)) return;
  if (book_.reserved(g) > book_.usable(g))
    spdlog::warn(
        "client {} '{}': its MPS context ({} at a {}% share) takes GPU {} past the {} "
        "the arbiter manages ({} reserved)",
        c.id, c.name, FormatByteSize(bytes), c.mps_share, gpus_[g].ordinal,
        FormatByteSize(book_.usable(g)), FormatByteSize(book_.reserved(g)));
}

void ArbiterImpl::ReleaseContext(Client& c) { (void)book_.ReleaseContext(c.id); }

void ArbiterImpl::QueueTransfer(Client& c, Transfer t, uint64_t now_ns) {
  if (c.transfers.Queue(t)) (void)TryIssue(c, now_ns);
  NoteUnissued(c);
}

void ArbiterImpl::PumpTransfers(uint64_t now_ns) {
  // A copy: issuing may queue orders for others (MakeRoom), which try to issue at once.
  for (const uint32_t id : std::vector<uint32_t>(unissued_.begin(), unissued_.end())) {
    Client* c = clients_.Find(id);
    if (c == nullptr || !c->transfers.FrontWaiting()) {
      unissued_.erase(id);
      continue;
    }
    (void)TryIssue(*c, now_ns);
  }
}

bool ArbiterImpl::MakeRoom(GpuIndex g, uint64_t need, uint64_t now_ns) {
  uint64_t freeing = 0;
  std::vector<RoomCandidate> candidates;
  for (const uint32_t id : book_.ClientsOn(g)) {
    const Client* c = clients_.Find(id);
    if (c == nullptr) continue;
    if (!c->transfers.empty()) {
      if (c->transfers.front().op == shm::SwapOp::kSwapOut && c->transfers.front().issued)
        freeing += c->quota;
      continue;
    }
    if (c->shadow && !c->session.holding() && c->session.where() == Where::kResident &&
        SwappableInPlace(*c))
      candidates.push_back({c->id, c->quota, c->last_use_ns});  // (an MPS client's memory
                                                                // stays unless verified)
  }
  const uint64_t available = book_.unreserved(g) + freeing;
  const std::vector<uint32_t> chosen = ChooseRoom(candidates, available, need, now_ns);
  if (chosen.empty() && available < need)
    spdlog::debug("GPU {}: no room for {} even with every idle vGPU swapped out ({} free or "
                  "freeing); nothing evicted, the swap-in waits",
                  gpus_[g].ordinal, FormatByteSize(need), FormatByteSize(available));
  for (const uint32_t id : chosen) {
    Client* v = clients_.Find(id);  // (issuing an order can remove a client it finds malformed)
    if (v == nullptr) continue;
    spdlog::debug("evicting idle client {} from GPU {} to make room", id, gpus_[g].ordinal);
    QueueTransfer(*v, {shm::SwapOp::kSwapOut, g, false, policy::SwapKind::kOut}, now_ns);
  }
  return !chosen.empty();
}

bool ArbiterImpl::TryIssue(Client& c, uint64_t now_ns) {
  if (c.transfers.empty() || c.session.op() != DriverOp::kNone)
    return false;  // a driver job decides next
  Transfer& t = c.transfers.front();
  if (t.issued) return false;
  // Whoever asked (the policy, MakeRoom, a release, a drain, gshare-ctl evict), an MPS client's
  // memory does not leave its GPU: a swap-out of it resident (allowed in place with
  // mps_swaps_verified, never for a deep eviction), or a swap-in elsewhere (a move).
  if (t.op == shm::SwapOp::kSwapOut ? c.session.where() == Where::kResident
                                    : t.gpu != c.session.gpu()) {
    const PinnedOp op = t.op == shm::SwapOp::kSwapOut && t.kind != policy::SwapKind::kDeepEvict
                            ? PinnedOp::kSwapInPlace
                            : PinnedOp::kOffItsGpu;
    const std::string what =
        t.op == shm::SwapOp::kSwapIn
            ? "a move to GPU " + std::to_string(gpus_[t.gpu].ordinal.value())
            : (op == PinnedOp::kSwapInPlace ? "a swap-out" : "a deep eviction's swap-out");
    if (RefusePinned(c, op, what)) {
      const Transfer refused = c.transfers.Pop();
      if (refused.op == shm::SwapOp::kSwapOut && refused.for_policy) {
        c.shadow = true;  // as a swap-out that failed: it stays, the policy believes it off
        Deliver(now_ns, policy::SwapDone{c.fid, ToPolicy(refused.gpu), refused.kind, 0, 0});
      } else if (refused.op == shm::SwapOp::kSwapIn && c.pending_grant &&
                 c.pending_grant->first == refused.gpu) {
        c.pending_grant.reset();
      }
      // A refused move of the policy's is left unanswered: only a policy that ignores
      // FunctionSpec::pinned asks, and only that function then waits, never the others.
      return TryIssue(c, now_ns);
    }
  }
  const DeviceOrdinal ordinal = gpus_[t.gpu].ordinal;
  if (t.op == shm::SwapOp::kSwapOut) {
    RevokeLease(c, now_ns);  // no offer stands beside an order (a take is adopted: holding)
    if (c.session.holding()) return false;        // swapped out once it yields
    if (c.session.where() != Where::kResident) {  // nothing to move
      const Transfer done = c.transfers.Pop();
      if (done.for_policy)
        Deliver(now_ns, policy::SwapDone{c.fid, ToPolicy(done.gpu), done.kind, 0, 0});
      return TryIssue(c, now_ns);
    }
    IssueOrder(c, t, gpus_[c.session.gpu()].ordinal, now_ns);
    return true;
  }
  // Swap-in to t.gpu.
  RevokeLeasesOn(t.gpu, &c, now_ns);  // c will compete for t.gpu: no lease stands there
  if (gpus_[t.gpu].drained) return false;  // gshare-ctl drain: retried after undrain
  if (now_ns < t.not_before_ns) return false;  // back-off after a failed swap-in (timer armed)
  if (c.session.where() == Where::kResident && c.session.gpu() == t.gpu && ReservedOn(c) == t.gpu) {
    const Transfer done = c.transfers.Pop();
    if (done.for_policy) c.shadow = false;
    if (done.for_policy) Deliver(now_ns, policy::SwapDone{c.fid, ToPolicy(done.gpu), policy::SwapKind::kIn, 0, 0});
    if (c.pending_grant && c.pending_grant->first == done.gpu) {
      const auto pg = *c.pending_grant;
      c.pending_grant.reset();
      Grant(c, pg.first, pg.second, now_ns);
    }
    return TryIssue(c, now_ns);
  }
  if (c.session.where() == Where::kResident) {  // resident elsewhere: move off that GPU first
    c.transfers.QueueFirst({shm::SwapOp::kSwapOut, c.session.gpu(), false, policy::SwapKind::kOut});
    return TryIssue(c, now_ns);
  }
  if (!book_.Fits(t.gpu, c.quota)) {
    (void)MakeRoom(t.gpu, c.quota, now_ns);
    return false;  // retried by PumpTransfers when memory frees
  }
  if (c.session.where() == Where::kCheckpointed) {
    if (!driver_ || !worker_) {
      spdlog::error("client {}: restore failed: no driver", c.id);
      return false;
    }
    // Restored by the driver worker onto the reserved target; the swap-in then completes at
    // once (FinishRestore).
    Reserve(c, t.gpu);
    StartRestore(c, t.gpu, now_ns);
    return false;
  }
  if (c.session.gpu() != t.gpu && !t.contexts_moved) {
    if (CanCheckpoint()) {
      // Its process's contexts move first (StartMove); the order goes out when they have.
      StartMove(c, t.gpu, now_ns);
      return false;
    }
    t.contexts_moved = true;  // no checkpoint API: the swap-in alone moves it
  }
  Reserve(c, t.gpu);
  IssueOrder(c, t, ordinal, now_ns);
  return true;
}

void ArbiterImpl::IssueOrder(Client& c, Transfer& t, DeviceOrdinal ordinal, uint64_t now_ns,
                             bool record) {
  Transit(c, c.session.OrderIssued(t.op, t.gpu));
  t.order_seq = c.chan.IssueSwapOrder(t.op, ordinal.value(), now_ns);
  t.issued = true;
  t.issued_ns = now_ns;
  ++(t.op == shm::SwapOp::kSwapIn ? stats_.swap_ins : stats_.swap_outs);
  if (record) RecordOrderBegin(c, t, ordinal);
}

void ArbiterImpl::RecordOrderBegin(const Client& c, const Transfer& t, DeviceOrdinal ordinal) {
  Record(t.op == shm::SwapOp::kSwapIn ? shm::EventType::kSwapInBegin : shm::EventType::kSwapOutBegin,
         &c, ordinal, t.order_seq, c.quota);
}

void ArbiterImpl::CompleteTransfer(Client& c, const shm::ClientView& v, uint64_t now_ns) {
  const Transfer t = c.transfers.Pop();
  const bool ok = v.ack_status == shm::SwapAckStatus::kOk;
  // (A move that failed answers its swap-in, not yet issued, as a failed one: no order ended.)
  const Command command = t.issued ? Transit(c, c.session.OrderAcknowledged(ok)) : Command::kNone;
  const DeviceOrdinal ordinal = gpus_[t.gpu].ordinal;
  if (ok)
    telemetry_.SwapDone(c.tel, t.gpu,
                        t.op == shm::SwapOp::kSwapIn ? SwapDirection::kIn : SwapDirection::kOut,
                        v.ack_bytes_moved, v.ack_duration_ns);
  if (t.op == shm::SwapOp::kSwapOut) {
    Record(shm::EventType::kSwapOutEnd, &c, ordinal, t.order_seq, v.ack_bytes_moved,
           v.ack_duration_ns, v.resident_bytes);
    if (ok) {
      c.shadow = false;
      Carry(c, command);  // its memory left the GPU
    } else {
      spdlog::error("client {} '{}': swap-out failed; it stays resident", c.id, c.name);
      c.shadow = true;  // the policy will believe it is off the GPU
    }
  } else {
    Record(shm::EventType::kSwapInEnd, &c, ordinal, t.order_seq, v.ack_bytes_moved,
           v.ack_duration_ns, v.resident_bytes);
    if (ok) {
      c.transfers.Succeeded();
      if (t.for_policy) c.shadow = false;
    } else {
      Carry(c, command);            // the target's reservation
      if (!t.issued) Unreserve(c);  // a failed move's answer: no order ended, the same release
      const uint64_t backoff = c.transfers.Failed();
      if (c.pending_grant && c.pending_grant->first == t.gpu) {
        Transfer retry{shm::SwapOp::kSwapIn, t.gpu, false, policy::SwapKind::kIn};
        retry.not_before_ns = now_ns + backoff;
        (void)c.transfers.Queue(retry);
        spdlog::error("client {} '{}': swap-in onto GPU {} failed ({} in a row); retrying in {} ms",
                      c.id, c.name, ordinal, c.transfers.failures(), backoff / 1'000'000);
      } else {
        spdlog::error("client {} '{}': swap-in onto GPU {} failed", c.id, c.name, ordinal);
      }
    }
  }
  spdlog::debug("client {}: {} acknowledged: {} in {} us", c.id,
                t.op == shm::SwapOp::kSwapOut ? "swap-out" : "swap-in",
                FormatByteSize(v.ack_bytes_moved), v.ack_duration_ns / 1000);
  if (t.for_policy)
    Deliver(now_ns, policy::SwapDone{c.fid, ToPolicy(t.gpu), t.kind, v.ack_bytes_moved, ToUs(v.ack_duration_ns)});
  if (t.op == shm::SwapOp::kSwapIn && ok && c.pending_grant && c.pending_grant->first == t.gpu) {
    const auto pg = *c.pending_grant;
    c.pending_grant.reset();
    Grant(c, pg.first, pg.second, now_ns);
  }
  (void)TryIssue(c, now_ns);
  NoteUnissued(c);
  PumpTransfers(now_ns);
}

void ArbiterImpl::Grant(Client& c, GpuIndex g, policy::Duration slice_us, uint64_t now_ns,
                        bool corun) {
  if (LeaseBeforeGrant(c, g, slice_us, now_ns)) return;  // arbiter_lease.cc
  if (stopping_ || c.session.holding()) return;
  if (gpus_[g].drained || c.session.where() != Where::kResident || c.session.gpu() != g ||
      ReservedOn(c) != g || c.transfers.InFlight() != nullptr) {
    // Not (yet) resident there: make it so, then grant.
    c.pending_grant = {g, slice_us};
    if (!c.transfers.HasSwapInTo(g)) QueueTransfer(c, {shm::SwapOp::kSwapIn, g, false, policy::SwapKind::kIn}, now_ns);
    return;
  }
  if (const uint32_t other = gpus_[g].holders.Other(c.id); other != 0) {
    if (!corun) {
      spdlog::error("policy granted GPU {} to client {} while client {} holds it",
                    gpus_[g].ordinal, c.id, other);
    } else if (const std::string why = CorunRefusal(c, g, now_ns); !why.empty()) {
      // The co-run rules say no (another fault domain, a back-off, not an MPS client...): the
      // grant waits until the GPU is free and then runs exclusively (GrantDeferred). Answering
      // it at once as a slice that ended made the policy grant it again beside the same
      // holders within the same event: a loop that never ended (the demo's hung arbiter).
      spdlog::debug("client {}: co-run grant on GPU {} deferred until the GPU is free: {}", c.id,
                    gpus_[g].ordinal, why);
      ++stats_.corun_refusals;
      if (c.pending_grant && c.pending_grant->first == g) c.pending_grant.reset();
      c.deferred_grant = {g, slice_us};
      deferred_.insert(c.id);
      return;
    } else {
      corun_.CountJoin();
      ++stats_.corun_joins;
    }
  }
  const uint64_t slice_ns = slice_us > 0 ? static_cast<uint64_t>(slice_us) * 1000
                                         : static_cast<uint64_t>(config_.slice.count());
  const uint64_t deadline = now_ns + slice_ns;
  const uint32_t seq = c.chan.Grant(gpus_[g].ordinal.value(), deadline);  // clears the hint
  c.hinted = false;
  for (auto& [id, other] : clients_) {
    if (other->hinted && other->session.gpu() == g) {
      other->chan.SetNextHint(false, 0);
      other->hinted = false;
    }
  }
  Transit(c, c.session.Granted(g));
  c.release_spun = false;
  c.grant_ns = now_ns;
  c.slice_deadline_ns = deadline;
  c.preempt_sent = false;
  c.last_use_ns = now_ns;
  c.corun_grant = !gpus_[g].holders.empty();
  for (uint32_t hid : gpus_[g].holders.ids())  // the set is co-running from now on
    if (Client* h = clients_.Find(hid)) h->corun_grant = true;
  gpus_[g].holders.Add(c.id);
  ++stats_.grants;
  telemetry_.Granted(c.tel, g, now_ns);
  Record(shm::EventType::kGrant, &c, gpus_[g].ordinal, seq, deadline);
  ScheduleDeadlines(c, now_ns);  // its slice end (a grant may come after its last poll)
}

void ArbiterImpl::DropHold(Client& c) {
  if (c.session.holding() && gpus_.contains(c.session.hold_gpu()))
    gpus_[c.session.hold_gpu()].holders.Remove(c.id);
  c.session.Dropped();
  c.corun_grant = false;
}

void ArbiterImpl::GrantDeferred(uint64_t now_ns) {
  for (const uint32_t id : std::vector<uint32_t>(deferred_.begin(), deferred_.end())) {
    Client* c = clients_.Find(id);
    if (c == nullptr || !c->deferred_grant) {
      deferred_.erase(id);
      continue;
    }
    if (c->session.holding()) continue;
    const auto [g, slice_us] = *c->deferred_grant;
    if (!gpus_.contains(g) || !gpus_[g].holders.empty()) continue;
    c->deferred_grant.reset();
    deferred_.erase(id);
    Grant(*c, g, slice_us, now_ns);  // exclusive: the GPU is free
  }
}

void ArbiterImpl::Preempt(Client& c, uint64_t now_ns) {
  if (!c.session.holding() && c.deferred_grant) {
    // A co-run grant still waiting for its GPU: withdrawn, answered as a slice that ended.
    const GpuIndex g = c.deferred_grant->first;
    c.deferred_grant.reset();
    Deliver(now_ns, policy::SliceExpired{c.fid, ToPolicy(g)});
    return;
  }
  if (!c.session.holding() || c.preempt_sent) return;
  c.chan.RequestPreempt();
  c.preempt_sent = true;
  c.preempt_ns = now_ns;
  ++stats_.preemptions;
  Record(shm::EventType::kPreempt, &c, gpus_[c.session.hold_gpu()].ordinal, c.chan.grant_seq());
  HintNext(c.session.hold_gpu());
}

void ArbiterImpl::HintNext(GpuIndex g) {
  // The policy decides who is granted next; the waiter resident on g with the earliest
  // deadline is the likely one (EDF among the GPU's ready functions). A wrong guess costs
  // only that client's bounded spin.
  Client* best = nullptr;
  for (auto& [id, c] : clients_) {
    if (!c->burst_outstanding || c->session.holding() || c->session.where() != Where::kResident ||
        c->session.gpu() != g)
      continue;
    if (best == nullptr || c->deadline_ns < best->deadline_ns) best = c.get();
  }
  if (best == nullptr || best->hinted) return;
  best->chan.SetNextHint(true, kNextSpinNs);
  best->hinted = true;
}

void ArbiterImpl::PollClient(Client& c, uint64_t now_ns) {
  // A driver operation on its process is in flight: the channel is read when it completes.
  if (c.session.op() != DriverOp::kNone) return;
  // Validate timestamps against the clock as it is now: `now_ns` was read at the start of the
  // loop iteration, and an iteration can be long (a checkpoint under load took 1.5 s), during
  // which clients keep writing heartbeats that would look like they lie in the future.
  auto view = c.chan.ReadClient(std::max(now_ns, NowNs()));
  if (!view.ok() && view.status().code() == shm::StatusCode::kTimeout) {
    // Caught inside a write: read again next iteration (its doorbell is armed before we sleep,
    // and the write ends with a ring); malformed only if it stays there.
    if (c.channel_busy_since_ns == 0) c.channel_busy_since_ns = now_ns;
    if (now_ns - c.channel_busy_since_ns < kChannelBusyLimitNs) return;
  }
  if (view.ok()) c.channel_busy_since_ns = 0;
  if (!view.ok()) {
    ++stats_.malformed_channels;
    spdlog::warn("client {} '{}' wrote a malformed channel ({}); disconnecting it", c.id, c.name,
                 view.status().ToString());
    RemoveClient(c.id, Unregister::kMalformed, now_ns);
    return;
  }
  // The view describes the client under the grant the channel names now. A grant issued while
  // acting on it (a swap-in's completion granting a pending grant, a lease adopted) makes all
  // of it stale at once: a client quick enough (or an arbiter descheduled in between) runs the
  // new grant and releases it, burst ended, before we look. Only `released` re-read passed that
  // off as a slice expiry of a burst still running (the stale in_burst), and the policy granted
  // it again: a grant nobody asked for (ArbiterLease.TakeVersusRevokeRacesNeverLeaveTwoHolders
  // under ASan). So the whole view is read again after a grant; a failed read is retried at the
  // next poll (the doorbell is armed before the loop sleeps).
  const uint32_t read_under = c.chan.grant_seq();
  // In a burst as this poll began: a swap-in request first seen now was made for that burst
  // (below).
  const bool in_burst_before = c.burst_outstanding || c.session.holding();
  if (const Transfer* t = c.transfers.InFlight(); t != nullptr && view->ack_seq == t->order_seq) {
    CompleteTransfer(c, *view, now_ns);
    if (clients_.Find(c.id) == nullptr) return;
  }
  if (!PollLease(c, view, now_ns)) return;  // a lease take is adopted here (arbiter_lease.cc)
  if (c.chan.grant_seq() != read_under) {
    view = c.chan.ReadClient(std::max(now_ns, NowNs()));
    if (!view.ok()) return;
  }
  if (c.session.holding() && !view->released && view->state == shm::ClientTokenState::kDraining &&
      !c.release_spun) {
    // The holder is about to release: prepare the next tenant and wait briefly for it — once
    // per grant: a holder that stays draining (and rings) is then served like any other.
    c.release_spun = true;
    ++stats_.release_spins;
    HintNext(c.session.hold_gpu());
    if (shm::SpinUntil([&] { return c.chan.Released(); }, kReleaseSpinNs)) {
      auto again = c.chan.ReadClient(NowNs());
      if (again.ok()) view = std::move(again);
    }
  }
  if (c.session.holding() && view->released) {
    const GpuIndex g = c.session.hold_gpu();
    const bool corun_grant = c.corun_grant;
    DropHold(c);
    c.last_use_ns = now_ns;
    ++stats_.yields;
    telemetry_.Released(c.tel, HoldEnded(c, g, gpus_[g].ordinal, now_ns, !view->in_burst,
                                         view->burst_end_ns != 0 ? view->burst_end_ns : now_ns));
    Record(shm::EventType::kYield, &c, gpus_[g].ordinal, c.chan.grant_seq(), now_ns - c.grant_ns);
    const shm::ClientView& v = *view;
    if (c.lease.unconfirmed()) {
      ReleaseUnconfirmedLease(c, v, now_ns);  // the policy has not granted it: no event
    } else if (v.in_burst && v.bursts_started == c.burst_number) {
      // (A burst counter that moved on means the client ended the held burst and already
      // started its next one before we looked: that is a burst end, below, and the next one
      // starts after it.)
      Deliver(now_ns, policy::SliceExpired{c.fid, ToPolicy(g)});
    } else {
      uint64_t gpu_time = v.burst_gpu_time_ns;
      if (gpu_time == 0) gpu_time = now_ns - c.grant_ns;
      if (v.burst_end_ns != 0) Record(shm::EventType::kBurstEnd, &c, gpus_[g].ordinal, v.burst_end_ns, gpu_time);
      c.burst_outstanding = false;
      if (corun_grant) {
        const uint64_t end = v.burst_end_ns != 0 ? v.burst_end_ns : now_ns;
        JudgeCorunBurst(c, g, end > c.burst_start_ns ? end - c.burst_start_ns : 0, gpu_time,
                        now_ns);
      } else {
        c.solo.AddSolo(gpu_time);
        CheckMpsClient(c, now_ns);  // it has a context now: a real MPS client is its server's
      }
      policy::BurstEnd end{c.fid, ToPolicy(g), std::max<policy::Duration>(1, ToUs(gpu_time))};
      end.corun = corun_grant;
      Deliver(now_ns, end);
    }
    if (clients_.Find(c.id) == nullptr) return;
    // The sole tenant of its GPU is granted again as soon as it asks: its next acquisition
    // spins for the grant (bounded) instead of sleeping in the futex, one wake-up less on the
    // round trip through the arbiter after every idle gap.
    // Better still, it is offered its next grant in advance (a lease, arbiter_lease.cc).
    if (!c.session.holding() && !c.hinted && c.session.where() == Where::kResident &&
        c.session.gpu() == g && SoleTenant(clients_.all(), c) && !MaybeOfferLease(c, g, *view, now_ns)) {
      c.chan.SetNextHint(true, kNextSpinNs);
      c.hinted = true;
    }
  }
  const shm::ClientView& v = *view;
  // A swap-in request counts as asking for a burst unless it was made for the one the client
  // was in when this poll began: a client that reports its burst's start, asks for its swap-in,
  // runs and releases between two polls would otherwise be started on a second burst nobody
  // asked for, granted, and hold the GPU until its slice ran out (found by
  // ArbiterInProcess.ACoRunSetWhoseMemberThreatensItsSloIsBrokenUpAndBacksOff under load). A
  // new burst reports its start (`unstarted` in StartBurstIfAsked) or waits (kWaiting).
  const bool wants = v.state == shm::ClientTokenState::kWaiting ||
                     (v.swapin_requests != c.swapin_requests_seen && !in_burst_before);
  c.swapin_requests_seen = v.swapin_requests;
  StartBurstIfAsked(c, v, wants, now_ns);
}

void ArbiterImpl::StartBurstIfAsked(Client& c, const shm::ClientView& v, bool wants,
                                    uint64_t now_ns) {
  // A burst the arbiter has not started asks for the GPU even when its request was seen while
  // the previous one was still outstanding (a lease take's burst answered only when the policy
  // granted it, LeaseBeforeGrant): a client waiting to be swapped in asks once, and that
  // request must not be lost (ArbiterLease.TakeVersusRevokeRacesNeverLeaveTwoHolders: the
  // function waited for ever).
  const bool unstarted = v.in_burst && v.bursts_started != c.burst_number;
  if (c.session.holding() || c.burst_outstanding || !(wants || unstarted) ||
      !LeaseBeforeBurst(c, now_ns))
    return;
  c.burst_number = v.bursts_started;
  c.burst_outstanding = true;
  c.last_use_ns = now_ns;
  c.deadline_ns = now_ns + uint64_t{c.slo_ms} * 1'000'000;
  c.burst_start_ns = v.burst_start_ns != 0 ? std::min(v.burst_start_ns, now_ns) : now_ns;
  Record(shm::EventType::kBurstStart, &c, kNoOrdinal, v.burst_start_ns);
  Telemetry::BurstStarted(c.tel, v.burst_start_ns != 0 ? v.burst_start_ns : now_ns);
  Deliver(now_ns, policy::BurstStart{c.fid});
}

void ArbiterImpl::PollAll(uint64_t now_ns) {
  std::vector<uint32_t> ids;
  ids.reserve(clients_.size());
  for (const auto& [id, c] : clients_) ids.push_back(id);
  for (uint32_t id : ids) {
    if (Client* c = clients_.Find(id)) PollClient(*c, now_ns);
    if (Client* c = clients_.Find(id)) ScheduleDeadlines(*c, now_ns);
  }
}

void ArbiterImpl::CheckSlices(uint64_t now_ns) {
  for (const GpuIndex g : gpus_.indices()) {
    // A copy: enforcement may take a holder off the set.
    for (uint32_t hid : std::vector<uint32_t>(gpus_[g].holders.ids())) {
      Client* c = clients_.Find(hid);
      if (c == nullptr) {
        gpus_[g].holders.Remove(hid);
        continue;
      }
      if (!c->preempt_sent && now_ns >= c->slice_deadline_ns && (stopping_ || SomeoneWaitsFor(clients_.all(), g)))
        Preempt(*c, now_ns);
      if (c->preempt_sent && now_ns >= c->preempt_ns + static_cast<uint64_t>(config_.preempt_grace.count()))
        Enforce(*c, now_ns);
    }
  }
}

}  // namespace gshare::arbiter
