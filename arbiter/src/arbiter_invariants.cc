// ArbiterImpl::CheckInvariants: the invariants at the top of arbiter_impl.h, checked against the
// arbiter's whole state (docs/arbiter.md, "State"). Run after every loop iteration when
// `check_invariants` is on (the default in debug builds; the fault and hostile-tenant suites turn
// it on in their daemons), a violation is logged with what is wrong and counted
// (`invariant_violations`), never ignored silently.
#include <map>
#include <string>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"

namespace gshare::arbiter {

std::string ArbiterImpl::CheckInvariants() const {
  std::string why;
  auto fail = [&](const std::string& what) {
    if (why.empty()) why = what;
  };
  std::vector<uint64_t> reserved(gpus_.size(), 0);
  std::vector<uint64_t> orphaned(gpus_.size(), 0);
  for (const auto& [id, c] : clients_) {
    if (c->reserved_on) {
      if (*c->reserved_on >= gpus_.size()) {
        fail("client " + std::to_string(id) + " is reserved on a GPU index out of range");
        continue;
      }
      reserved[*c->reserved_on] += c->quota;
    }
    // 3: a holder is its GPU's holder.
    if (c->holding && (c->hold_gpu >= gpus_.size() || gpus_[c->hold_gpu].holder != id))
      fail("client " + std::to_string(id) + " holds GPU index " + std::to_string(c->hold_gpu) +
           " whose holder is another");
    // 4: at most one swap order in flight, and only the front one.
    for (size_t i = 1; i < c->transfers.size(); ++i)
      if (c->transfers[i].issued) fail("client " + std::to_string(id) + " has two orders in flight");
    // 2: an issued swap-in has its quota reserved on its target.
    if (!c->transfers.empty() && c->transfers.front().issued &&
        c->transfers.front().op == shm::SwapOp::kSwapIn &&
        c->reserved_on != c->transfers.front().gpu)
      fail("client " + std::to_string(id) + " has a swap-in in flight without its reservation");
    // One driver operation at most, and it is the job the loop waits for.
    if (c->op != DriverOp::kNone && client_jobs_.count(c->op_job) == 0)
      fail("client " + std::to_string(id) + " waits for a driver job that is not in flight");
  }
  for (const auto& [id, o] : orphans_) {
    if (o.gpu >= gpus_.size()) {
      fail("orphan " + std::to_string(id) + " on a GPU index out of range");
      continue;
    }
    reserved[o.gpu] += o.bytes;
    orphaned[o.gpu] += o.bytes;
  }
  for (uint32_t g = 0; g < gpus_.size(); ++g) {
    const GpuState& gpu = gpus_[g];
    const std::string name = "GPU " + std::to_string(gpu.info.ordinal);
    // 1 and 6: reservations are the clients' quotas and the orphans' bytes, within the GPU
    // (beyond it only as counted overshoot: a thawed process's orphan).
    if (gpu.reserved != reserved[g])
      fail(name + " reserves " + std::to_string(gpu.reserved) + " bytes, its clients and orphans " +
           std::to_string(reserved[g]));
    if (gpu.orphaned != orphaned[g])
      fail(name + " counts " + std::to_string(gpu.orphaned) + " orphaned bytes, its orphans " +
           std::to_string(orphaned[g]));
    if (gpu.reserved > gpu.usable && gpu.overshoot_events == 0)
      fail(name + " reserves more than it has without an overshoot counted");
    // 3: the holder is a client that holds it.
    if (gpu.holder != 0) {
      const auto it = clients_.find(gpu.holder);
      if (it == clients_.end() || !it->second->holding || it->second->hold_gpu != g)
        fail(name + "'s holder " + std::to_string(gpu.holder) + " does not hold it");
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

}  // namespace gshare::arbiter
