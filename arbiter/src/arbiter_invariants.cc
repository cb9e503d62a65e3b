// ArbiterImpl::CheckInvariants: the invariants at the top of arbiter_impl.h, checked against the
// arbiter's whole state (docs/arbiter.md, "State"). Run after every loop iteration when
// `check_invariants` is on (the default in debug builds; the fault and hostile-tenant suites turn
// it on in their daemons), a violation is logged with what is wrong and counted
// (`invariant_violations`), never ignored silently. Also where the loop applies its sessions'
// transitions (Transit: a refused one is such a violation) and carries out their commands
// (Carry: client_session.h).
#include <string>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"

namespace gshare::arbiter {

std::string ArbiterImpl::CheckInvariants() const {
  std::string why;
  auto fail = [&](const std::string& what) {
    if (why.empty()) why = what;
  };
  // 1 and 6: each GPU's reserved and orphaned bytes are the sums of its holders (the book's own
  // check), and the book's holders are exactly the clients' quotas and the orphans' bytes.
  fail(book_.CheckInvariants());
  fail(leases_.CheckInvariants());
  size_t reserving = 0;
  ByGpu<uint64_t> contexts(std::vector<uint64_t>(gpus_.size(), 0));
  for (const auto& [id, c] : clients_) {
    // An MPS client's context is counted on its GPU, at its share, for as long as it is here.
    const uint64_t context = MpsContextBytes(config_.corun, c->mps_share);
    if (book_.ContextBytes(id) != context)
      fail("client " + std::to_string(id) + " has " + std::to_string(book_.ContextBytes(id)) +
           " context bytes reserved for an MPS share of " + std::to_string(c->mps_share) + "%");
    if (gpus_.contains(c->session.gpu())) contexts[c->session.gpu()] += context;
    if (const auto g = book_.ClientGpu(id)) {
      ++reserving;
      if (book_.ClientBytes(id) != c->quota)
        fail("client " + std::to_string(id) + " has " + std::to_string(book_.ClientBytes(id)) +
             " bytes reserved for a quota of " + std::to_string(c->quota));
    }
    // The lease book lists every offer outstanding in a channel (a superset of them).
    if (c->chan.lease_offered() && !leases_.OfferGpu(id))
      fail("client " + std::to_string(id) + " has a lease offer the lease book does not list");
    // 7: its fields are a state of the diagram.
    fail(CheckClientState(*c));
    // 3: a holder is its GPU's holder.
    if (c->session.holding() &&
        (!gpus_.contains(c->session.hold_gpu()) || !gpus_[c->session.hold_gpu()].holders.Holds(id)))
      fail("client " + std::to_string(id) + " holds GPU index " +
           std::to_string(c->session.hold_gpu().value()) + " whose holders do not include it");
    // 4: at most one swap order in flight, and only the front one.
    if (const std::string orders = c->transfers.Check(); !orders.empty())
      fail("client " + std::to_string(id) + " " + orders);
    // 2: an issued swap-in has its quota reserved on its target.
    if (const Transfer* t = c->transfers.InFlight();
        t != nullptr && t->op == shm::SwapOp::kSwapIn && book_.ClientGpu(id) != t->gpu)
      fail("client " + std::to_string(id) + " has a swap-in in flight without its reservation");
    // One driver operation at most, and it is the job the loop waits for.
    if (c->session.op() != DriverOp::kNone && !jobs_.IsClientJob(c->session.op_job(), id))
      fail("client " + std::to_string(id) + " waits for a driver job that is not in flight");
  }
  for (const GpuIndex g : book_.gpus())
    if (book_.contexts(g) != contexts[g])
      fail("GPU index " + std::to_string(g.value()) + " counts " +
           std::to_string(book_.contexts(g)) + " bytes of MPS contexts, its clients' shares " +
           std::to_string(contexts[g]));
  if (reserving != book_.clients())
    fail("the reservation book holds " + std::to_string(book_.clients()) +
         " client reservations, the clients " + std::to_string(reserving));
  for (const auto& [id, o] : orphans_)
    if (book_.OrphanGpu(id) != o.gpu || book_.OrphanBytes(id) != o.bytes)
      fail("orphan " + std::to_string(id) + "'s reservation is not in the book as it says");
  if (orphans_.size() != book_.orphans())
    fail("the reservation book holds " + std::to_string(book_.orphans()) + " orphans, the arbiter " +
         std::to_string(orphans_.size()));
  // 3: the holders are clients that hold it; several only as a co-run set the rules allow.
  for (const GpuIndex g : gpus_.indices()) {
    const GpuState& gpu = gpus_[g];
    const std::string name = "GPU " + std::to_string(gpu.ordinal.value());
    std::vector<CorunMember> members;
    for (uint32_t hid : gpu.holders.ids()) {
      const Client* h = clients_.Find(hid);
      if (h == nullptr || !h->session.holding() || h->session.hold_gpu() != g) {
        fail(name + "'s holder " + std::to_string(hid) + " does not hold it");
        continue;
      }
      members.push_back(MemberOf(*h));
    }
    if (gpu.holders.size() <= 1) continue;
    if (!corun_.Enabled(g)) fail(name + " has " + std::to_string(gpu.holders.size()) +
                                 " holders but is not marked for co-running");
    if (gpu.holders.size() > corun_.config().max_members)
      fail(name + " has more holders than corun_max_members");
    for (const CorunMember& m : members) {
      if (m.mps_share == 0) fail(name + "'s co-runner " + std::to_string(m.id) + " is not an MPS client");
      if (FaultDomainKey(m, corun_.config().fault_domain) !=
          FaultDomainKey(members.front(), corun_.config().fault_domain))
        fail(name + "'s co-run set spans fault domains");
    }
  }
  return why;
}

void ArbiterImpl::MaybeCheckInvariants() {
  if (!config_.check_invariants) return;
  const std::string why = CheckInvariants();
  if (why.empty()) return;
  ++stats_.invariant_violations;
  spdlog::critical("arbiter invariant violated: {}", why);
}

Command ArbiterImpl::Transit(const Client& c, const Transition& transition) {
  if (transition.ok()) return transition.command;
  ++stats_.invariant_violations;
  spdlog::critical("arbiter invariant violated: client {} '{}': {}", c.id, c.name,
                   transition.status.message());
  return Command::kNone;
}

void ArbiterImpl::Carry(Client& c, Command command) {
  switch (command) {
    case Command::kNone:
      break;
    case Command::kUnreserve:
      Unreserve(c);
      break;
  }
}

}  // namespace gshare::arbiter
