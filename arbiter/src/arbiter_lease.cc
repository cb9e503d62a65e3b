// The sole tenant's lease (docs/arbiter.md, "The lease"). When a client releases its GPU at
// the end of a burst and nobody else wants that GPU, the arbiter offers it its next grant in
// advance (ArbiterChannel::OfferLease); the client's next request takes it with one CAS and
// runs at once, without a round trip. The arbiter adopts the take as a grant when it next
// looks (burst start, grant, the policy's BurstStart, the event ring). Whatever could compete
// for the GPU withdraws the offer first with a CAS (RevokeLease); a revocation that loses to a
// take adopts it, so a GPU never has two holders: every grant on a GPU revokes the offers on
// it before it is issued.
//
// The policy learns of a take as a BurstStart and normally grants the function at once (its
// GPU is active, it is resident and the GPU is free): that grant confirms the lease holder. If
// the policy decides otherwise, the holder is asked to yield; its release then produces no
// policy event (the policy still has its burst queued), and a burst that ended meanwhile is
// answered with its BurstEnd when the policy grants it.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"

namespace gshare::arbiter {
namespace {

// args[0] of kLease records.
constexpr uint64_t kLeaseOffered = 0;
constexpr uint64_t kLeaseTaken = 1;
constexpr uint64_t kLeaseRevoked = 2;
constexpr uint64_t kLeaseRevokeLost = 3;

}  // namespace

bool ArbiterImpl::MaybeOfferLease(Client& c, GpuIndex g, const shm::ClientView& v, uint64_t now_ns) {
  if (!config_.lease || stopping_ || c.chan.lease_offered() || c.session.holding() ||
      c.lease.malformed())
    return false;
  if (v.in_burst || v.state != shm::ClientTokenState::kIdle) return false;
  if (c.burst_outstanding || c.lease.ended_before_grant() || c.pending_grant ||
      !c.transfers.empty())
    return false;
  if (c.session.where() != Where::kResident || c.session.gpu() != g || ReservedOn(c) != g)
    return false;
  if (gpus_[g].drained || !gpus_[g].holders.empty()) return false;
  const DeviceOrdinal ordinal = gpus_[g].ordinal;
  const uint32_t seq =
      c.chan.OfferLease(ordinal.value(), static_cast<uint64_t>(config_.slice.count()), now_ns);
  leases_.Offered(c.id, g);
  ++stats_.lease_offers;
  spdlog::debug("client {}: offered a lease (grant {}) on GPU {}", c.id, seq, ordinal);
  Record(shm::EventType::kLease, &c, ordinal, kLeaseOffered, seq);
  return true;
}

void ArbiterImpl::AdoptLease(Client& c, uint64_t now_ns) {
  const std::optional<GpuIndex> offered = leases_.OfferGpu(c.id);
  if (!offered)  // every offer is booked when made (MaybeOfferLease): a bug
    spdlog::error("client {} took a lease the lease book does not know; taken as on its GPU", c.id);
  const GpuIndex g = offered.value_or(c.session.gpu());
  leases_.Ended(c.id);
  GpuState& gpu = gpus_[g];
  const DeviceOrdinal ordinal = gpu.ordinal;
  if (const uint32_t other = gpu.holders.Other(c.id); other != 0)  // grants revoke first: a bug
    spdlog::error("client {} took its lease on GPU {} while client {} holds it", c.id, ordinal,
                  other);
  // The take came right after the client's burst-start report: count the grant from there
  // (bounded by its last release and now).
  uint64_t taken_ns = now_ns;
  const auto v = c.chan.ReadClient(std::max(now_ns, NowNs()));
  if (v.ok() && v->burst_start_ns != 0)
    taken_ns = std::clamp(v->burst_start_ns, std::min(c.last_use_ns, now_ns), now_ns);
  const uint64_t deadline = taken_ns + static_cast<uint64_t>(config_.slice.count());
  const uint32_t seq = c.chan.AdoptLease(deadline);
  Transit(c, c.session.Granted(g));
  c.grant_ns = taken_ns;
  c.slice_deadline_ns = deadline;
  c.preempt_sent = false;
  c.last_use_ns = now_ns;
  c.hinted = false;
  c.lease.Taken();
  gpu.holders.Add(c.id);
  c.corun_grant = false;
  ++stats_.grants;
  ++stats_.lease_takes;
  const bool new_burst = !c.burst_outstanding;
  if (new_burst) {
    // The client reports its burst's start just before it takes: that burst (its count) is the
    // take's.
    c.burst_number = v.ok() ? v->bursts_started : c.burst_number + 1;
    c.burst_outstanding = true;
    c.deadline_ns = taken_ns + uint64_t{c.slo_ms} * 1'000'000;
    Record(shm::EventType::kBurstStart, &c, kNoOrdinal, taken_ns);
    Telemetry::BurstStarted(c.tel, taken_ns);
  }
  telemetry_.Granted(c.tel, g, taken_ns);
  Record(shm::EventType::kGrant, &c, ordinal, seq, deadline, /*by lease*/ 1);
  Record(shm::EventType::kLease, &c, ordinal, kLeaseTaken, seq);
  spdlog::debug("client {}: took its lease (grant {}) on GPU {}", c.id, seq, ordinal);
  if (new_burst) Deliver(now_ns, policy::BurstStart{c.fid});  // the policy's grant confirms it
}

bool ArbiterImpl::PollLease(Client& c, shm::Result<shm::ClientView>& view, uint64_t now_ns) {
  const shm::LeaseStatus s = c.chan.PollLease();
  if (c.lease.malformed() || s == shm::LeaseStatus::kMalformed) {
    ++stats_.malformed_channels;
    spdlog::warn("client {} '{}' wrote a value nobody may write into its lease word; "
                 "disconnecting it",
                 c.id, c.name);
    RemoveClient(c.id, Unregister::kMalformed, now_ns);
    return false;
  }
  if (s == shm::LeaseStatus::kTaken) {
    const uint32_t id = c.id;
    AdoptLease(c, now_ns);
    if (clients_.Find(id) == nullptr) return false;
    // The view's `released` referred to the previous grant: read it again for the adopted one
    // (a client that took, ran and released before we looked is seen releasing now).
    auto again = c.chan.ReadClient(std::max(now_ns, NowNs()));
    if (again.ok()) {
      view = std::move(again);
    } else {
      view->released = false;  // looked at again next iteration
    }
  }
  if (c.session.holding() && c.lease.unconfirmed() && !c.preempt_sent && !delivering_) {
    // The policy did not grant the take at once: it wants the function to wait (or elsewhere).
    ++stats_.lease_unconfirmed;
    spdlog::debug("client {}: the policy did not grant its lease take; asking it to yield", c.id);
    Preempt(c, now_ns);
  }
  return true;
}

void ArbiterImpl::RevokeLease(Client& c, uint64_t now_ns) {
  if (!c.chan.lease_offered()) {
    leases_.Ended(c.id);  // an entry whose offer ended unseen: dropped when visited
    return;
  }
  const DeviceOrdinal ordinal = gpus_[leases_.OfferGpu(c.id).value_or(c.session.gpu())].ordinal;
  const uint32_t seq = c.chan.lease_seq();
  switch (c.chan.RevokeLease()) {
    case shm::LeaseStatus::kNone:
      leases_.Ended(c.id);
      return;
    case shm::LeaseStatus::kOffered:
      return;
    case shm::LeaseStatus::kRevoked:
      leases_.Ended(c.id);
      ++stats_.lease_revokes;
      Record(shm::EventType::kLease, &c, ordinal, kLeaseRevoked, seq);
      spdlog::debug("client {}: lease {} revoked", c.id, seq);
      return;
    case shm::LeaseStatus::kTaken:
      ++stats_.lease_revokes_lost;
      Record(shm::EventType::kLease, &c, ordinal, kLeaseRevokeLost, seq);
      AdoptLease(c, now_ns);
      return;
    case shm::LeaseStatus::kMalformed:
      c.lease.Scribbled();  // disconnected at its next poll (not here: callers hold it)
      return;
  }
}

void ArbiterImpl::RevokeLeasesOn(GpuIndex g, const Client* except, uint64_t now_ns) {
  // The book's offers on g only, not every client (a copy: revoking ends entries).
  for (const uint32_t id : leases_.OffersOn(g)) {
    Client* o = clients_.Find(id);
    if (o == nullptr) {
      leases_.Ended(id);
    } else if (o != except) {
      RevokeLease(*o, now_ns);
    }
  }
}

bool ArbiterImpl::LeaseBeforeBurst(Client& c, uint64_t now_ns) {
  RevokeLease(c, now_ns);  // it asked the normal way: its offer is stale
  if (c.session.holding()) return false;  // it took the lease first: adopted, its burst is started
  if (c.session.where() == Where::kResident) RevokeLeasesOn(c.session.gpu(), &c, now_ns);
  return true;
}

bool ArbiterImpl::LeaseBeforeGrant(Client& c, GpuIndex g, policy::Duration slice_us,
                                   uint64_t now_ns) {
  RevokeLease(c, now_ns);  // an offer never stands beside a grant
  if (c.session.holding() && c.lease.Confirm()) {
    // The policy grants the burst the client already runs by its lease: confirmed.
    if (g != c.session.hold_gpu())
      spdlog::error("policy granted GPU {} to client {} which holds GPU {} by its lease",
                    gpus_[g].ordinal, c.id, gpus_[c.session.hold_gpu()].ordinal);
    const uint64_t slice_ns = slice_us > 0 ? static_cast<uint64_t>(slice_us) * 1000
                                           : static_cast<uint64_t>(config_.slice.count());
    c.slice_deadline_ns = now_ns + slice_ns;
    return true;
  }
  if (!c.session.holding() && c.lease.ended_before_grant()) {
    // The burst ran by lease and ended before the policy granted it: answer the grant.
    const uint64_t gpu_ns = c.lease.TakeEnded().value_or(0);
    c.burst_outstanding = false;
    Deliver(now_ns, policy::BurstEnd{c.fid, ToPolicy(g), std::max<policy::Duration>(
                                                    1, static_cast<policy::Duration>(gpu_ns / 1000))});
    // Its next burst may have begun meanwhile and asked while this one was outstanding (a
    // client waiting to be swapped in asks once): started now, or it would wait for ever.
    if (clients_.Find(c.id) != nullptr)
      if (auto v = c.chan.ReadClient(std::max(now_ns, NowNs())); v.ok())
        StartBurstIfAsked(c, *v, /*wants=*/false, now_ns);
    return true;
  }
  if (c.session.holding()) return false;
  RevokeLeasesOn(g, &c, now_ns);
  // A lease holder is always alone on its GPU (leases are offered on free GPUs only).
  const uint32_t h = gpus_[g].holders.Other(c.id);
  if (h != 0) {
    const Client* o = clients_.Find(h);
    if (o != nullptr && o->lease.unconfirmed()) {
      // A lease take won the race with this grant (the policy learns of it in the BurstStart
      // queued just now): the grant is answered as a slice that ended, and is asked again.
      spdlog::debug("client {}: grant on GPU {} deferred: client {} took its lease", c.id,
                    gpus_[g].ordinal, h);
      Deliver(now_ns, policy::SliceExpired{c.fid, ToPolicy(g)});
      return true;
    }
  }
  return false;
}

void ArbiterImpl::ReleaseUnconfirmedLease(Client& c, const shm::ClientView& v, uint64_t now_ns) {
  // Still in the taken burst: it wants the GPU again, and the policy's pending grant serves it.
  // A later burst (its count moved on) means the taken one ended: answered when the policy
  // grants, and the later one starts after that (LeaseBeforeGrant).
  if (v.in_burst && v.bursts_started == c.burst_number) {
    c.lease.ReleasedInBurst();
    return;
  }
  const uint64_t gpu_ns = v.burst_gpu_time_ns != 0 ? v.burst_gpu_time_ns : now_ns - c.grant_ns;
  c.lease.EndedBeforeGrant(gpu_ns);
  if (v.burst_end_ns != 0)
    Record(shm::EventType::kBurstEnd, &c, gpus_[c.session.hold_gpu()].ordinal, v.burst_end_ns,
           gpu_ns);
}

}  // namespace gshare::arbiter
