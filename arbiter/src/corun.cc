// The co-run rules (corun.h): who may join a GPU's set, when a set is revoked, the back-offs.
#include "corun.h"

namespace gshare::arbiter {

uint64_t FaultDomainKey(const CorunMember& m, CorunFaultDomain domain) {
  switch (domain) {
    case CorunFaultDomain::kUid: return m.uid;
    case CorunFaultDomain::kGid: return m.gid;
    case CorunFaultDomain::kAny: return 0;
  }
  return m.uid;
}

uint64_t MpsContextBytes(const CorunConfig& config, uint32_t share_pct) {
  if (share_pct == 0) return 0;
  const uint64_t floor = std::min(config.mps_context_floor_bytes, config.mps_context_bytes);
  const uint64_t scaled = (config.mps_context_bytes - floor) * std::min(share_pct, 100u);
  constexpr uint64_t kMiB = 1ull << 20;
  const uint64_t bytes = floor + (scaled + 99) / 100;
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

CorunBook::CorunBook(const CorunConfig& config, const std::vector<DeviceOrdinal>& ordinals)
    : config_(config),
      gpu_backoff_(std::vector<uint64_t>(ordinals.size(), 0)),
      answered_(std::vector<Answered>(ordinals.size())) {
  for (const DeviceOrdinal o : ordinals)  // config.gpus names ordinals
    enabled_.push_back(std::find(config.gpus.begin(), config.gpus.end(), o.value()) !=
                       config.gpus.end());
}

std::string CorunBook::JoinRefusal(GpuIndex g, const CorunMember& joiner,
                                   const std::vector<CorunMember>& holders,
                                   uint64_t now_ns) const {
  if (!Enabled(g)) return "the GPU is not marked for co-running (corun_gpus)";
  if (now_ns < gpu_backoff_[g]) return "the GPU backs off after a revocation";
  if (joiner.mps_share == 0) return "its process is not an MPS client";
  if (joiner.unconfirmed)
    return "the GPU's MPS daemon has not confirmed that it serves its process (yet)";
  if (holders.size() + 1 > config_.max_members)
    return "the set has corun_max_members (" + std::to_string(config_.max_members) + ") members";
  Prune(now_ns);
  const uint64_t domain = FaultDomainKey(joiner, config_.fault_domain);
  if (joiner.needs_solo)
    return "it runs a burst alone first, the reference its co-run bursts are judged by";
  for (const CorunMember& h : holders) {
    if (h.id == joiner.id) return "it holds the GPU already";
    if (h.needs_solo)
      return "holder " + std::to_string(h.id) + " runs a burst alone (its solo reference)";
    if (h.mps_share == 0) return "holder " + std::to_string(h.id) + " is not an MPS client";
    if (h.unconfirmed)
      return "the GPU's MPS daemon has not confirmed that it serves holder " + std::to_string(h.id);
    if (FaultDomainKey(h, config_.fault_domain) != domain)
      return "holder " + std::to_string(h.id) + " is of another fault domain (corun_fault_domain)";
    if (const auto it = pair_backoff_.find(PairOf(joiner.name, h.name));
        it != pair_backoff_.end() && now_ns < it->second)
      return "the pair with '" + h.name + "' backs off after a revocation";
  }
  return {};
}

void CorunBook::Revoke(GpuIndex g, const CorunMember& victim,
                       const std::vector<CorunMember>& others, uint64_t now_ns) {
  const auto until = now_ns + static_cast<uint64_t>(config_.backoff.count());
  Prune(now_ns);
  if (gpu_backoff_.contains(g)) gpu_backoff_[g] = std::max(gpu_backoff_[g], until);
  for (const CorunMember& o : others)
    if (o.id != victim.id) pair_backoff_[PairOf(victim.name, o.name)] = until;
  ++revocations_;
}

std::string CorunBook::ServerRefusal(GpuIndex g, uid_t uid, const std::vector<uid_t>& served,
                                     uint64_t now_ns) const {
  for (const uid_t u : served)
    if (u != uid)
      return "its MPS server serves uid " + std::to_string(u) +
             " (MPS serves one uid per server at a time): run exclusively";
  if (answered_.contains(g)) {
    const Answered& a = answered_[g];
    if (a.at_ns != 0 && a.uid != uid && now_ns < a.at_ns + kShareAnswerHoldNs)
      return "its MPS server was just promised to uid " + std::to_string(a.uid) +
             " (MPS serves one uid per server at a time): run exclusively";
  }
  return {};
}

void CorunBook::NoteShareAnswered(GpuIndex g, uid_t uid, uint64_t now_ns) {
  if (answered_.contains(g)) answered_[g] = Answered{uid, now_ns};
}

void CorunBook::NotePromise(GpuIndex g, pid_t pid, uint64_t pinned, uint64_t swappable,
                            uint64_t now_ns, bool corun) {
  // Bounded by the queries within kAnsweredGpuKeepNs (each takes a registration token).
  for (auto it = promises_.begin(); it != promises_.end();)
    it = now_ns >= it->second.at_ns + kAnsweredGpuKeepNs ? promises_.erase(it) : std::next(it);
  promises_[pid] = Promise{g, pinned, swappable, now_ns, corun};
}

std::optional<GpuIndex> CorunBook::CorunGpuOf(pid_t pid, uint64_t now_ns) const {
  const auto it = promises_.find(pid);
  if (it == promises_.end() || !it->second.corun || now_ns >= it->second.at_ns + kAnsweredGpuKeepNs)
    return std::nullopt;
  return it->second.gpu;
}

uint64_t CorunBook::PromisedBytes(GpuIndex g, pid_t except, uint64_t now_ns) const {
  uint64_t sum = 0;
  for (const auto& [pid, p] : promises_)
    if (pid != except && p.gpu == g && now_ns < p.at_ns + kShareAnswerHoldNs) sum += p.pinned;
  return sum;
}

uint64_t CorunBook::LargestPromisedSwappable(GpuIndex g, pid_t except, uint64_t now_ns) const {
  uint64_t largest = 0;
  for (const auto& [pid, p] : promises_)
    if (pid != except && p.gpu == g && now_ns < p.at_ns + kShareAnswerHoldNs)
      largest = std::max(largest, p.swappable);
  return largest;
}

void CorunBook::Prune(uint64_t now_ns) const {
  for (auto it = pair_backoff_.begin(); it != pair_backoff_.end();)
    it = now_ns >= it->second ? pair_backoff_.erase(it) : std::next(it);
}

}  // namespace gshare::arbiter
