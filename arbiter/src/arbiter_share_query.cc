// The share query (docs/protocol.md, "Share query"): before its process's real cuInit, a shim
// asks which MPS share its function would get, so that CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is set
// before the driver reads it. The answer is the policy's share class for the function as it
// would register now (Policy::ShareForSpec), on the GPU it would register on (for a function
// declaring demands short of the whole GPU, a GPU marked for co-running where it may be served
// and fits, if there is one: CorunGpuWithRoom), when that GPU is
// marked for co-running and its MPS server may serve the process's uid (MPS serves one uid per
// server at a time: a uid other than that of the GPU's MPS clients, or of a share answered
// moments ago, is answered "not co-run"); otherwise "not co-run" and the environment stays as
// it is. What MPS clients pin on their GPU (their contexts; their quotas unless
// mps_swaps_verified) never leaves it, so a share is answered only when the function's quota
// and context fit beside what the GPU's MPS clients and the shares promised moments ago pin, and
// the pins then leave room for the largest vGPU still to be swapped in there
// (PinnedRoomRefusal): a co-run MPS client that started swapped out for want of room could
// never come in (the H200 demo, 2026-12-04), nor could an exclusive vGPU larger than what the
// pins leave. A query creates no client and reserves nothing; only the uid a share was answered
// to and what the answer promises are kept a moment (CorunBook::NoteShareAnswered, NotePromise).
// The answer names the GPU (ordinal and UUID) and, when co-run on a GPU whose MPS daemon the
// arbiter runs, that daemon's pipe directory: the shim joins it, so a node may mark several GPUs.
#include <spdlog/spdlog.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "arbiter_impl.h"
#include "gshare/common/units.h"

namespace gshare::arbiter {

void ArbiterImpl::AnswerShareQuery(Arrival a, uint64_t now_ns) {
  const shm::PeerCredentials peer = a.conn.peer();
  const shm::ShareQuery& q = *a.query;
  ++stats_.share_queries;
  shm::ShareAnswer answer;
  answer.arbiter_epoch = epoch_;
  // Judged as the registration it announces: the allow-list, the capacity, the tenant's limits
  // (a query takes a token of registration_rate_per_uid, like a registration).
  shm::RegisterRequest as_registration;
  as_registration.quota_bytes = q.quota_bytes == 0 ? 1 : q.quota_bytes;
  as_registration.slo_ms = q.slo_ms;
  std::string why = Validate(as_registration, peer, a.groups);
  if (why.empty()) (void)limits_.Check(peer.uid, peer.pid, now_ns, &why);
  if (!why.empty()) {
    answer.reason = why.substr(0, shm::kReasonSize - 1);
  } else {
    // The function as it would register: an MPS client declaring these demands.
    Client would_be;
    would_be.uid = peer.uid;
    would_be.gid = peer.gid;
    would_be.name = q.function_name.empty() ? "pid" + std::to_string(peer.pid) : q.function_name;
    would_be.quota = as_registration.quota_bytes;
    would_be.slo_ms = q.slo_ms;
    would_be.mps_share = 100;
    would_be.compute_demand_pct = q.compute_demand_pct;
    would_be.bandwidth_demand_pct = q.bandwidth_demand_pct;
    const policy::ShareClass share = policy_->ShareForSpec(SpecOf(would_be));
    const auto share_pct =
        static_cast<uint32_t>(std::clamp<long>(std::lround(share.compute_share * 100), 1, 100));
    const uint64_t context = MpsContextBytes(config_.corun, share_pct);
    // The GPU a registration would get; but a function that declares demands short of the whole
    // GPU (one the policy could co-run) goes to a GPU marked for co-running where it may be the
    // server's client and its memory fits beside the pins, if there is one: otherwise it would
    // co-run only if it happened to land there (the demo's servers, alternating between two
    // GPUs, left the marked one with fewer than two MPS clients in some runs).
    GpuIndex g = RegistrationGpu(as_registration);
    const bool could_corun = q.compute_demand_pct > 0 && q.compute_demand_pct < 100;
    if (could_corun && !corun_.Enabled(g)) {
      if (const auto marked = CorunGpuWithRoom(peer, as_registration.quota_bytes, context, now_ns))
        g = *marked;
    }
    answer.gpu = gpus_[g].ordinal.value();
    answer.gpu_uuid = gpus_[g].uuid;
    const std::string server_refusal =
        corun_.Enabled(g) ? corun_.ServerRefusal(g, peer.uid, MpsUids(g), now_ns) : std::string();
    if (!corun_.Enabled(g)) {
      answer.reason = "GPU " + std::to_string(answer.gpu) + " is not marked for co-running";
    } else if (!server_refusal.empty()) {
      answer.reason = "GPU " + std::to_string(answer.gpu) + ": " + server_refusal;
      // It runs exclusively on g: a vGPU that shares answered from now on must leave room for.
      corun_.NotePromise(g, peer.pid, 0, as_registration.quota_bytes, now_ns);
    } else if (const std::string room =
                   PinnedRoomRefusal(g, as_registration.quota_bytes, context, peer.pid, now_ns);
               !room.empty()) {
      answer.reason = "GPU " + std::to_string(answer.gpu) + ": " + room;
      corun_.NotePromise(g, peer.pid, 0, as_registration.quota_bytes, now_ns);  // as above
    } else {
      answer.corun = true;
      answer.share_pct = share_pct;
      answer.memory_limit_bytes = std::min<uint64_t>(share.memory_limit_bytes, shm::kMaxQuotaBytes);
      // The daemon it must join: with several marked GPUs, the environment cannot know which.
      answer.mps_pipe_directory = AnswerablePipeDir(g);
      corun_.NoteShareAnswered(g, peer.uid, now_ns);
      // What its process will pin on g: its context, and its quota unless MPS clients can be
      // parked (then that quota must find room like any vGPU's).
      const bool parkable = config_.corun.mps_swaps_verified;
      corun_.NotePromise(g, peer.pid, context + (parkable ? 0 : as_registration.quota_bytes),
                         parkable ? as_registration.quota_bytes : 0, now_ns, /*corun=*/true);
    }
  }
  spdlog::info("pid {} uid {} ('{}'): share query answered: GPU {}, {}{}{}", peer.pid, peer.uid,
               q.function_name,
               answer.gpu == shm::kNoGpu ? std::string("none") : std::to_string(answer.gpu),
               answer.corun ? "co-run at " + std::to_string(answer.share_pct) + "%"
                            : std::string("not co-run"),
               answer.reason.empty() ? "" : ": ", answer.reason);
  if (answer.reason.size() >= shm::kReasonSize) answer.reason.resize(shm::kReasonSize - 1);
  // One small packet on a connection with nothing queued: never waited for.
  if (auto s = a.conn.Answer(answer, std::chrono::nanoseconds(0)); !s.ok())
    spdlog::debug("pid {}: share answer not sent: {}", peer.pid, s.ToString());
  reaper_.Dispose(std::move(a.conn));
}

std::string ArbiterImpl::AnswerablePipeDir(GpuIndex g) const {
  std::string dir = mps_.PipeDir(g);
  if (dir.empty()) return dir;  // the operator runs g's daemon (no mps_control): not ours to name
  // The configuration refuses an mps_dir that could fail this (config.cc): a safety net only.
  if (std::string why = shm::MpsPipeDirectoryProblem(dir); !why.empty()) {
    spdlog::warn("GPU {}'s MPS pipe directory '{}' {}: the share answer cannot name it (a shorter "
                 "mps_dir would let co-run processes find their GPU's daemon by themselves)",
                 gpus_[g].ordinal.value(), dir, why);
    return {};
  }
  return dir;
}

std::vector<uid_t> ArbiterImpl::MpsUids(GpuIndex g) const {
  // One user per MPS server: the uids of g's MPS clients (their processes are the server's
  // clients; an MPS client never leaves its GPU), orphaned ones included (alive, still the
  // server's clients though disconnected from the arbiter).
  std::vector<uid_t> served;
  for (const auto& [id, c] : clients_)
    if (c->mps_share != 0 && c->session.gpu() == g) served.push_back(c->uid);
  for (const auto& [id, o] : orphans_)
    if (o.mps_share != 0 && o.gpu == g) served.push_back(o.uid);
  return served;
}

std::optional<GpuIndex> ArbiterImpl::CorunGpuWithRoom(const shm::PeerCredentials& peer,
                                                      uint64_t quota, uint64_t context,
                                                      uint64_t now_ns) const {
  std::optional<GpuIndex> best;
  for (const GpuIndex g : gpus_.indices()) {
    if (!corun_.Enabled(g) || gpus_[g].drained) continue;
    if (!corun_.ServerRefusal(g, peer.uid, MpsUids(g), now_ns).empty()) continue;
    if (!PinnedRoomRefusal(g, quota, context, peer.pid, now_ns).empty()) continue;
    if (!best || book_.unreserved(g) > book_.unreserved(*best)) best = g;
  }
  return best;
}

uint64_t ArbiterImpl::PinnedBytes(GpuIndex g, pid_t except, uint64_t now_ns,
                                  uint64_t* largest_swappable) const {
  // MPS clients' quotas are pinned unless they can be parked; their contexts always are, and
  // so is all an orphan holds.
  const bool quotas_pinned = !config_.corun.mps_swaps_verified;
  uint64_t pinned = corun_.PromisedBytes(g, except, now_ns);
  uint64_t largest = corun_.LargestPromisedSwappable(g, except, now_ns);
  for (const auto& [id, c] : clients_) {
    if (c->session.gpu() != g) continue;
    if (c->mps_share != 0) pinned += book_.ContextBytes(c->id);
    if (c->mps_share != 0 && quotas_pinned)
      pinned += c->quota;
    else
      largest = std::max(largest, c->quota);
  }
  for (const auto& [id, o] : orphans_)
    if (o.mps_share != 0 && o.gpu == g) pinned += o.bytes;
  if (largest_swappable != nullptr) *largest_swappable = largest;
  return pinned;
}

std::string ArbiterImpl::PinnedRoomRefusal(GpuIndex g, uint64_t quota, uint64_t context, pid_t pid,
                                           uint64_t now_ns) const {
  const bool quotas_pinned = !config_.corun.mps_swaps_verified;
  // The largest vGPU on g that can be swapped must still fit beside what is pinned, or it could
  // never come in again (the starved function waits for ever).
  uint64_t largest_swappable = 0;
  const uint64_t pinned = PinnedBytes(g, pid, now_ns, &largest_swappable);
  const uint64_t mine_pinned = context + (quotas_pinned ? quota : 0);
  const uint64_t usable = book_.usable(g);
  const std::string what =
      "its " + FormatByteSize(quota) + " + " + FormatByteSize(context) + " MPS context";
  const std::string whose = FormatByteSize(pinned) + " pinned by MPS clients in " +
                            FormatByteSize(usable) +
                            (quotas_pinned ? " (mps_swaps_verified = false)" : "");
  if (pinned + context + quota > usable)
    return what + " do not fit beside " + whose + ": run exclusively";
  if (pinned + mine_pinned + largest_swappable > usable)
    return what + " beside " + whose + " leave no room for a swappable " +
           FormatByteSize(largest_swappable) + " vGPU: run exclusively";
  return {};
}

}  // namespace gshare::arbiter
