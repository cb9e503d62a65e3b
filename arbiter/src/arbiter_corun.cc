// The arbiter's side of co-running (docs/arbiter.md, "Co-running"): a client as a co-run
// member and as the policy's function spec (its demands, its fault domain, the pin of an MPS
// client), the share advice, who may join a GPU's set, the private MPS daemons' start, exit and
// restart, the revocation judged from a co-run burst, and the refusal of orders that would move
// a pinned MPS client's memory. The share query's answer is arbiter_share_query.cc's; grants of
// co-run sets are the policy adapter's (arbiter_schedule.cc).
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"

namespace gshare::arbiter {

CorunMember ArbiterImpl::MemberOf(const Client& c) const {
  const bool unconfirmed = c.mps_share != 0 && c.mps_check != Client::MpsCheck::kServed &&
                           mps_.HasDaemon(c.session.gpu());
  return CorunMember{c.id, c.uid, c.gid, c.name, c.mps_share, c.solo.needs_solo(), unconfirmed};
}

policy::FunctionSpec ArbiterImpl::SpecOf(const Client& c) const {
  policy::FunctionSpec spec;
  spec.model = c.name;
  spec.weights_bytes = c.quota;
  // An MPS client's context stays on its GPU while its vGPU is parked (swapped out there).
  spec.context_bytes = MpsContextBytes(config_.corun, c.mps_share);
  spec.slo = static_cast<policy::Duration>(c.slo_ms) * 1000;
  // Unknown demands (0) fill the GPU: such a function never co-runs. A process that is not an
  // MPS client cannot co-run either, whatever it declared.
  if (c.mps_share != 0 && c.compute_demand_pct != 0) {
    spec.compute_demand = c.compute_demand_pct / 100.0;
    spec.bandwidth_demand = c.bandwidth_demand_pct / 100.0;
  }
  spec.fault_domain = static_cast<uint32_t>(FaultDomainKey(MemberOf(c), config_.corun.fault_domain));
  // An MPS client's contexts live in its GPU's MPS server and the same-address swap and the
  // checkpoint are unverified under MPS (docs/arbiter.md, "Co-running"): it stays where it is.
  // So does a process confined to the GPUs its driver shows it (device_view.h): another GPU may be
  // one it cannot reach.
  spec.pinned = c.Stays();
  // Unless the operator verified the same-address swap under MPS here: then it may be parked
  // (swapped out and back in) on its GPU, still never moved or deep-evicted. A confined process
  // that is no MPS client is swapped on its GPU as any other.
  spec.pinned_parkable = spec.pinned && (c.mps_share == 0 || config_.corun.mps_swaps_verified);
  return spec;
}

void ArbiterImpl::AdviseShare(Client& c) {
  const policy::ShareClass share = policy_->ShareFor(c.fid);
  c.share_advice = static_cast<uint32_t>(std::lround(share.compute_share * 100));
  if (c.mps_share != 0 && corun_.Enabled(c.session.gpu()) && c.mps_share != c.share_advice)
    spdlog::warn("client {} '{}' runs at an MPS share of {}% where the policy's share class is "
                 "{}%: start it with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={}",
                 c.id, c.name, c.mps_share, c.share_advice, c.share_advice);
}

std::string ArbiterImpl::CorunRefusal(const Client& c, GpuIndex g, uint64_t now_ns) const {
  std::vector<CorunMember> holders;
  for (uint32_t hid : gpus_[g].holders.ids()) {
    const Client* h = clients_.Find(hid);
    if (h == nullptr) continue;
    // A holder on its way out (asked to yield, or holding by a lease the policy has not
    // granted) is no set to join.
    if (h->preempt_sent) return "holder " + std::to_string(hid) + " is yielding";
    if (h->lease.unconfirmed()) return "holder " + std::to_string(hid) + " holds by lease";
    holders.push_back(MemberOf(*h));
  }
  if (!config_.corun.mps_control.empty() && !mps_.Running(g)) return "its MPS daemon is down";
  return corun_.JoinRefusal(g, MemberOf(c), holders, now_ns);
}

shm::Status ArbiterImpl::StartMpsDaemons() {
  if (!corun_.AnyEnabled()) return shm::Status::Ok();
  if (config_.corun.mps_control.empty()) {
    spdlog::info("corun_gpus without mps_control: the operator's MPS daemon serves them");
    return shm::Status::Ok();
  }
  std::vector<MpsDaemons::Gpu> marked;
  for (const GpuIndex g : gpus_.indices())
    if (corun_.Enabled(g)) marked.push_back({g, gpus_[g].ordinal});
  if (auto s = mps_.Start(config_.corun.mps_control, config_.corun.mps_dir, marked); !s.ok())
    return s;
  for (const auto& m : marked)
    if (auto s = poller_.Add(mps_.pidfd(m.index), kTagMps | m.index.value()); !s.ok()) return s;
  return shm::Status::Ok();
}

void ArbiterImpl::OnMpsExit(GpuIndex g, uint64_t now_ns) {
  if (mps_.pidfd(g) >= 0) poller_.Remove(mps_.pidfd(g));
  mps_.OnExit(g, now_ns);
  if (mps_.Running(g) || !gpus_.contains(g)) return;
  // Its clients lost MPS: back to exclusive slices (the longest holder keeps the GPU).
  BreakUpSet(g, now_ns);
}

void ArbiterImpl::RestartMpsDaemons(uint64_t now_ns) {
  if (now_ns < mps_.NextRestartNs()) return;
  for (const GpuIndex g : mps_.RestartDue(now_ns))
    if (auto s = poller_.Add(mps_.pidfd(g), kTagMps | g.value()); !s.ok())
      spdlog::error("GPU {}: cannot watch its MPS daemon: {}", gpus_[g].ordinal, s.ToString());
}

void ArbiterImpl::BreakUpSet(GpuIndex g, uint64_t now_ns) {
  std::vector<Client*> set;
  for (uint32_t hid : gpus_[g].holders.ids())
    if (Client* h = clients_.Find(hid)) set.push_back(h);
  std::sort(set.begin(), set.end(), [](const Client* a, const Client* b) { return a->grant_ns < b->grant_ns; });
  for (size_t i = 1; i < set.size(); ++i) Preempt(*set[i], now_ns);
}

void ArbiterImpl::JudgeCorunBurst(Client& c, GpuIndex g, uint64_t latency_ns, uint64_t gpu_time_ns,
                                  uint64_t now_ns) {
  const std::optional<uint64_t> typical = c.solo.Typical();
  // The set it ran in: the holders left, and c (its hold is dropped already).
  const uint64_t members = gpus_[g].holders.size() + (gpus_[g].holders.Holds(c.id) ? 0 : 1);
  const CorunVerdict verdict = arbiter::JudgeCorunBurst(
      latency_ns, gpu_time_ns, typical, c.slo_ms, config_.corun.threat_percent, members);
  c.solo.AddCorun();
  // (kNoReference cannot come here: a member without a solo burst neither joins nor is joined.)
  if (verdict == CorunVerdict::kUnlike) {
    c.solo.Refresh();
    spdlog::info("GPU {}: client {} '{}' held the GPU {} ms co-running where it holds it {} ms "
                 "alone, more than co-running with {} members explains: other work (a load), "
                 "not held against the set; its next burst runs alone",
                 gpus_[g].ordinal, c.id, c.name, gpu_time_ns / 1'000'000, *typical / 1'000'000,
                 members);
    return;
  }
  if (verdict != CorunVerdict::kThreatened) return;
  std::vector<CorunMember> others;
  for (uint32_t hid : gpus_[g].holders.ids())
    if (const Client* h = clients_.Find(hid)) others.push_back(MemberOf(*h));
  corun_.Revoke(g, MemberOf(c), others, now_ns);
  ++stats_.corun_revocations;
  spdlog::info("GPU {}: co-running revoked: client {} '{}' took {} ms against its {} ms SLO, "
               "holding the GPU {} ms where it holds it {} ms alone; exclusive slices for {} ms",
               gpus_[g].ordinal, c.id, c.name, latency_ns / 1'000'000, c.slo_ms,
               gpu_time_ns / 1'000'000, *typical / 1'000'000,
               corun_.config().backoff.count() / 1'000'000);
  // Back to exclusive slices: the one that has held longest keeps the GPU, the others yield.
  BreakUpSet(g, now_ns);
}

bool ArbiterImpl::RefusePinned(Client& c, PinnedOp op, std::string_view what) {
  if (!c.Stays()) return false;
  // In place: a confined process that is no MPS client is swapped on its GPU as any other.
  if (op == PinnedOp::kSwapInPlace && (c.mps_share == 0 || config_.corun.mps_swaps_verified))
    return false;
  if (c.mps_share != 0) ++stats_.mps_pins_refused;
  const std::string_view reason = c.mps_share != 0 ? kMpsPinReason : kConfinedPinReason;
  if (!c.pin_warned) {
    spdlog::warn("client {} '{}': {} refused: {}", c.id, c.name, what, reason);
    c.pin_warned = true;
  } else {
    spdlog::debug("client {} '{}': {} refused: {}", c.id, c.name, what, reason);
  }
  return true;
}

}  // namespace gshare::arbiter
