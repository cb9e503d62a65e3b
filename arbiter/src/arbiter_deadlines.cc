// The arbiter's timed work (docs/arbiter.md, "The loop"): each client's deadlines derived from
// its state into the DeadlineQueue (ScheduleDeadlines, after every poll of the client), the due
// ones acted on (RunDue: late swap orders, deep evictions, doorbell unmutes; the other kinds only
// wake the loop for CheckSlices, PumpTransfers and PollAll), and the loop's next wake-up. With
// the two id sets beside it (refused co-run grants, swap orders waiting to go out), no part of
// the loop's timed work scans every client.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "gshare/common/units.h"

namespace gshare::arbiter {

using Kind = DeadlineQueue::Kind;

uint64_t ArbiterImpl::DeadlineOf(const Client& c, Kind kind, uint64_t now_ns) const {
  switch (kind) {
    case Kind::kOrderDeadline:
      return OrderDeadlineNs(c);
    case Kind::kDeepEvict:
      return DeepEvictable(c) ? c.last_use_ns + static_cast<uint64_t>(config_.deep_evict_after.count())
                              : UINT64_MAX;
    case Kind::kSliceEnd:
      // Whether anyone waits for the GPU is asked when it comes (CheckSlices): a slice that ends
      // with nobody waiting costs one wake-up, and a waiter that comes later wakes the loop.
      return c.session.holding() && !c.preempt_sent && c.session.op() == DriverOp::kNone
                 ? c.slice_deadline_ns
                 : UINT64_MAX;
    case Kind::kPreemptGrace:
      // Being enforced on (op): its completion wakes the loop. Warned that it cannot be: no
      // wake-up either (Enforce says so once).
      return c.session.holding() && c.preempt_sent && !c.enforce_warned &&
                     c.session.op() == DriverOp::kNone
                 ? c.preempt_ns + static_cast<uint64_t>(config_.preempt_grace.count())
                 : UINT64_MAX;
    case Kind::kTransferBackOff:
      return c.transfers.RetryAtNs();
    case Kind::kChannelBusy: {
      // Every recheck period after it was first found busy (its next one after now).
      if (c.channel_busy_since_ns == 0) return UINT64_MAX;
      const uint64_t since = c.channel_busy_since_ns;
      const uint64_t periods = (std::max(now_ns, since) - since) / kChannelBusyRecheckNs + 1;
      return since + periods * kChannelBusyRecheckNs;
    }
    case Kind::kDoorbellUnmute:
      return UINT64_MAX;  // scheduled when the doorbell is muted (OnDoorbell), without marks
  }
  return UINT64_MAX;
}

uint64_t ArbiterImpl::OrderDeadlineNs(const Client& c) const {
  return c.transfers.DeadlineNs(c.quota,
                                static_cast<uint64_t>(config_.swap_order_timeout.count()));
}

bool ArbiterImpl::DeepEvictable(const Client& c) const {
  // Not an MPS client: the checkpoint API's behaviour for MPS clients is unverified (docs/
  // arbiter.md, "Co-running"; tests/gpu/mps-check.sh measures it). Not confined either: its
  // restore could land on a GPU it cannot see.
  return config_.deep_evict_after.count() > 0 && CanCheckpoint() &&
         c.session.op() == DriverOp::kNone && !c.Stays() &&
         c.session.where() == Where::kResident && !c.session.holding() && !c.burst_outstanding &&
         c.transfers.empty() && !stopping_;
}

void ArbiterImpl::ScheduleDeadlines(Client& c, uint64_t now_ns) {
  for (const Kind kind : {Kind::kOrderDeadline, Kind::kDeepEvict, Kind::kSliceEnd,
                          Kind::kPreemptGrace, Kind::kTransferBackOff, Kind::kChannelBusy})
    deadlines_.Want(c.deadline_marks, c.id, kind, DeadlineOf(c, kind, now_ns));
  if (c.deferred_grant) deferred_.insert(c.id);
  NoteUnissued(c);
}

void ArbiterImpl::NoteUnissued(const Client& c) {
  if (c.transfers.FrontWaiting()) unissued_.insert(c.id);
}

void ArbiterImpl::RunDue(uint64_t now_ns) {
  std::vector<uint32_t> late;
  for (const DeadlineQueue::Entry& e : deadlines_.PopDue(now_ns)) {
    if (e.kind == Kind::kDoorbellUnmute) {
      UnmuteDoorbell(e, now_ns);
      continue;
    }
    Client* c = clients_.Find(e.client_id);
    if (c == nullptr || !DeadlineQueue::Claim(c->deadline_marks, e)) continue;  // stale
    const uint64_t due = DeadlineOf(*c, e.kind, now_ns);
    if (due > now_ns) {  // moved later since (or gone: UINT64_MAX is never scheduled)
      deadlines_.Want(c->deadline_marks, c->id, e.kind, due);
      continue;
    }
    DeadlineQueue::Served(c->deadline_marks, e.kind, due);
    switch (e.kind) {
      case Kind::kOrderDeadline:
        if (OrderIsLate(*c, now_ns)) late.push_back(c->id);
        break;
      case Kind::kDeepEvict:
        DeepEvict(*c, now_ns);
        break;
      default:
        break;  // a wake-up: CheckSlices, PumpTransfers or PollAll acts in this iteration
    }
  }
  for (const uint32_t id : late) {
    Client* c = clients_.Find(id);
    if (c == nullptr) continue;
    spdlog::error("client {} '{}' (pid {}) has not acknowledged swap order {} in {} s; it no "
                  "longer reads its channel: disconnecting it",
                  c->id, c->name, c->pid, c->transfers.front().order_seq,
                  (now_ns - c->transfers.front().issued_ns) / 1'000'000'000ULL);
    ++stats_.order_timeouts;
    RemoveClient(id, Unregister::kOrderTimeout, now_ns);
  }
}

bool ArbiterImpl::OrderIsLate(Client& c, uint64_t now_ns) {
  // Did the order move since the arbiter last looked? Then it is alive: its deadline is a window
  // later (the cap still holds). Read only at deadlines: nothing on the hot path.
  const shm::SwapProgress p = c.chan.ReadSwapProgress();
  if (c.transfers.NoteProgress(p.seq, p.bytes, now_ns)) {
    spdlog::debug("client {}: swap order {} still moving ({} so far)", c.id, p.seq,
                  FormatByteSize(p.bytes));
    const uint64_t next = OrderDeadlineNs(c);
    if (now_ns < next) {
      deadlines_.Want(c.deadline_marks, c.id, Kind::kOrderDeadline, next);
      return false;
    }
  }
  return true;
}

void ArbiterImpl::DeepEvict(Client& c, uint64_t now_ns) {
  RevokeLease(c, now_ns);  // a take that won is adopted: not idle after all
  if (c.session.holding()) return;
  StartDeepEvict(c, now_ns);  // checkpointed by the driver worker (FinishDeepEvict)
}

uint64_t ArbiterImpl::NextDeadlineNs() const {
  uint64_t at = std::min(mps_.NextRestartNs(), deadlines_.NextNs());
  const policy::Time wake = policy_->NextWakeup();
  if (wake != policy::kNever)
    at = std::min(at, static_cast<uint64_t>(std::max<policy::Time>(wake, 0)) * 1000);
  return at;
}

}  // namespace gshare::arbiter
