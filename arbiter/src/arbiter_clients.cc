// Registration (validation against capacity, GPU assignment, channel hand-over) and liveness:
// a client's death is its connection's EOF, seen by epoll at once; everything it held (token,
// reservation, transfers, policy state) is reclaimed in the same loop iteration.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "gshare/common/units.h"
#include "gshare/shm/unix_socket.h"

namespace gshare::arbiter {
namespace {

constexpr auto kIoTimeout = std::chrono::milliseconds(100);

}  // namespace

std::optional<uint32_t> ArbiterImpl::GpuIndex(uint32_t ordinal) const {
  for (uint32_t i = 0; i < gpus_.size(); ++i)
    if (gpus_[i].info.ordinal == ordinal) return i;
  return std::nullopt;
}

void ArbiterImpl::AcceptPending(uint64_t now_ns) {
  for (;;) {
    auto conn = listener_.Accept(std::chrono::nanoseconds(0));
    if (!conn.ok()) {
      if (conn.status().code() != shm::StatusCode::kTimeout)
        spdlog::warn("accept: {}", conn.status().ToString());
      return;
    }
    Register(std::move(*conn), now_ns);
  }
}

std::string ArbiterImpl::Validate(const shm::RegisterRequest& req,
                                  const shm::PeerCredentials& peer,
                                  const std::vector<gid_t>& groups) const {
  if (stopping_) return "the arbiter is shutting down";
  if (clients_.size() >= config_.max_clients)
    return "the arbiter serves its maximum of " + std::to_string(config_.max_clients) + " clients";
  uint64_t largest = 0;
  for (const auto& g : gpus_) largest = std::max(largest, g.usable);
  if (req.quota_bytes > largest)
    return "GSHARE_VGPU_MEMORY " + FormatByteSize(req.quota_bytes) +
           " exceeds the largest managed GPU's usable memory " + FormatByteSize(largest);
  if (req.current_gpu != shm::kNoGpu && !GpuIndex(req.current_gpu))
    return "re-registration names GPU " + std::to_string(req.current_gpu) +
           ", which this arbiter does not manage";
  // The allow-list: the uid, the primary gid or any supplementary group (SO_PEERGROUPS, read
  // from the connection: the groups the peer had at connect(), no /proc race).
  const auto allowed_gid = [&](gid_t g) {
    return std::find(config_.allowed_gids.begin(), config_.allowed_gids.end(), g) !=
           config_.allowed_gids.end();
  };
  const bool listed =
      std::find(config_.allowed_uids.begin(), config_.allowed_uids.end(), peer.uid) !=
          config_.allowed_uids.end() ||
      allowed_gid(peer.gid) || std::any_of(groups.begin(), groups.end(), allowed_gid);
  if (!listed && !(config_.allowed_uids.empty() && config_.allowed_gids.empty()))
    return "uid " + std::to_string(peer.uid) + " gid " + std::to_string(peer.gid) +
           " is not allowed to register (allowed_uids / allowed_gids)";
  return {};
}

void ArbiterImpl::Register(shm::RegistrationConnection conn, uint64_t now_ns) {
  const shm::PeerCredentials peer = conn.peer();
  auto req = conn.ReceiveRequest(kIoTimeout);
  if (!req.ok()) {
    ++stats_.refusals;
    const std::string reason = "registration refused: " + req.status().ToString();
    spdlog::warn("pid {} uid {}: {}", peer.pid, peer.uid, reason);
    if (req.status().code() != shm::StatusCode::kClosed &&
        req.status().code() != shm::StatusCode::kTimeout) {
      std::string r = reason.substr(0, shm::kReasonSize - 1);
      for (char& ch : r)
        if (ch < 0x20 || ch > 0x7e) ch = '?';
      (void)conn.Refuse(r, epoch_, kIoTimeout);
    }
    return;
  }
  if (std::string why = Validate(*req, peer, PeerOf(conn.fd()).gids); !why.empty()) {
    ++stats_.refusals;
    spdlog::warn("pid {} uid {} ('{}'): registration refused: {}", peer.pid, peer.uid,
                 req->function_name, why);
    (void)conn.Refuse(why.substr(0, shm::kReasonSize - 1), epoch_, kIoTimeout);
    return;
  }

  // A previous arbiter instance that died between checkpointing this process and restoring it
  // left it frozen; nothing else would ever restore it.
  ThawProcess(peer.pid, req->function_name);
  // An orphan of this process (disconnected while alive) is replaced by this registration's own
  // reservation below: counted once, and no overshoot when it comes back resident.
  OnRegistrationFrom(peer.pid, now_ns);

  auto c = std::make_unique<Client>();
  c->id = next_client_id_++;
  c->fid = static_cast<policy::FunctionId>(fid_to_client_.size());
  c->pid = peer.pid;
  c->uid = peer.uid;
  c->quota = req->quota_bytes;
  c->slo_ms = req->slo_ms;
  c->name = req->function_name.empty() ? "pid" + std::to_string(peer.pid) : req->function_name;
  c->last_use_ns = now_ns;
  c->registered_ns = now_ns;
  const bool reregister = (req->flags & shm::kFlagReRegister) != 0;
  const bool resident = (req->flags & shm::kFlagResident) != 0;

  // A re-registration that is not resident is swapped out: it holds nothing on any GPU (its
  // reservation, if any, went with the arbiter that had it) and is swapped in on demand.
  const bool swapped_out = reregister && !resident;
  // GPU: where it already is (re-registration: its memory, or its process when swapped out),
  // else the one with the most free memory.
  uint32_t g = 0;
  if (req->current_gpu != shm::kNoGpu) {
    g = *GpuIndex(req->current_gpu);
  } else {
    for (uint32_t i = 1; i < gpus_.size(); ++i)
      if ((gpus_[g].drained && !gpus_[i].drained) ||  // gshare-ctl drain
          (gpus_[g].drained == gpus_[i].drained &&
           gpus_[i].usable - std::min(gpus_[i].usable, gpus_[i].reserved) >
               gpus_[g].usable - std::min(gpus_[g].usable, gpus_[g].reserved)))
        g = i;
  }
  shm::ChannelInit init;
  init.client_id = c->id;
  init.gpu = gpus_[g].info.ordinal;
  init.arbiter_epoch = epoch_;
  init.quota_bytes = c->quota;
  init.slice_ns = static_cast<uint64_t>(config_.slice.count());
  init.slo_ms = c->slo_ms;
  auto chan = shm::ArbiterChannel::Create(init);
  if (!chan.ok()) {
    ++stats_.refusals;
    spdlog::error("pid {}: cannot create a channel: {}", peer.pid, chan.status().ToString());
    (void)conn.Refuse("the arbiter could not create a channel", epoch_, kIoTimeout);
    return;
  }
  c->chan = std::move(*chan);
  c->gpu = g;

  // Residency: a vGPU that is (or may become) resident holds a reservation of its whole quota,
  // because the shim allocates within its quota without asking. A fresh client whose quota
  // fits starts resident (shadow: the policy believes it is on the host and will ask for a
  // swap-in, which then completes at once); one that does not fit starts swapped out: the
  // order is in the channel before the client ever sees it.
  const bool fits = gpus_[g].reserved + c->quota <= gpus_[g].usable;
  if (swapped_out) {
    c->where = Where::kOut;  // the policy, too, believes it is on the host
  } else if (resident || fits) {
    if (resident && !fits) {
      ++gpus_[g].overshoot_events;
      spdlog::warn("client '{}' re-registered resident on GPU {} beyond its usable memory; "
                   "idle vGPUs will be swapped out",
                   c->name, gpus_[g].info.ordinal);
    }
    c->where = Where::kResident;
    c->shadow = true;
    Reserve(*c, g);
  } else {
    c->where = Where::kResident;  // until it acknowledges the swap-out (it holds nothing yet)
    c->shadow = true;
    Transfer t;
    t.op = shm::SwapOp::kSwapOut;
    t.gpu = g;
    t.order_seq = c->chan.IssueSwapOrder(shm::SwapOp::kSwapOut, init.gpu, now_ns);
    t.issued = true;
    t.issued_ns = now_ns;
    c->transfers.push_back(t);
    ++stats_.swap_outs;
  }

  shm::RegisterReply reply;
  reply.accepted = true;
  reply.gpu = init.gpu;
  reply.client_id = c->id;
  reply.channel_size = shm::kChannelSegmentSize;
  reply.quota_bytes = c->quota;
  reply.arbiter_epoch = epoch_;
  reply.reason = std::string("fail_mode=") + FailModeName(config_.fail_mode);
  if (auto s = conn.Accept(reply, c->chan.channel_fd(), c->chan.doorbell_fd(), kIoTimeout);
      !s.ok()) {
    spdlog::warn("pid {}: accept failed: {}", peer.pid, s.ToString());
    Unreserve(*c);
    return;
  }
  c->chan.CloseChannelFd();
  c->conn = std::move(conn);
  if (auto s = AddFd(c->conn.fd(), kTagConn | c->id); !s.ok()) {
    spdlog::error("{}", s.ToString());
    Unreserve(*c);
    return;
  }
  c->doorbell = DoorbellGuard(
      {config_.doorbell_rate, static_cast<uint64_t>(config_.doorbell_flood_disconnect.count())},
      now_ns);
  if (auto s = AddFd(c->chan.doorbell_fd(), kTagDoorbell | c->id); !s.ok()) {
    spdlog::error("{}", s.ToString());
    DelFd(c->conn.fd());
    Unreserve(*c);
    return;
  }

  ++stats_.registrations;
  if (reregister) ++stats_.re_registrations;
  spdlog::info("client {} '{}' pid {} uid {}: quota {}, SLO {} ms, GPU {}{}{}", c->id, c->name,
               c->pid, c->uid, FormatByteSize(c->quota), c->slo_ms, init.gpu,
               reregister ? " (re-registration)" : "",
               c->reserved_on ? "" : ", starts swapped out");
  Record(shm::EventType::kRegister, c.get(), init.gpu, c->quota, c->slo_ms,
         static_cast<uint64_t>(c->pid), c->uid);
  const auto packed_name = shm::PackEventName(c->name);  // for gshare-trace
  Record(shm::EventType::kClientName, c.get(), init.gpu, packed_name[0], packed_name[1],
         packed_name[2], packed_name[3]);

  policy::FunctionSpec spec;
  spec.model = c->name;
  spec.weights_bytes = c->quota;
  spec.context_bytes = 0;
  spec.slo = static_cast<policy::Duration>(c->slo_ms) * 1000;
  const policy::FunctionId fid = c->fid;
  fid_to_client_.push_back(c->id);
  clients_.emplace(c->id, std::move(c));
  Deliver(now_ns, policy::FunctionRegistered{fid, spec});
}

void ArbiterImpl::OnConnectionEvent(uint32_t client_id, uint64_t now_ns) {
  Client* c = ById(client_id);
  if (c == nullptr) return;
  auto packet = shm::ReceivePacket(c->conn.fd(), std::chrono::nanoseconds(0));
  if (packet.ok()) {
    // The only message a registered client sends is Goodbye (it is leaving cleanly). Its
    // channel is read once more first: a release it wrote just before (its last burst's end)
    // may not have been seen yet when both wake the same loop iteration.
    spdlog::info("client {} '{}' said goodbye", c->id, c->name);
    PollClient(*c, now_ns);
    if (ById(client_id) == nullptr) return;  // the last read found it malformed
    RemoveClient(client_id, 0, now_ns);
    return;
  }
  if (packet.status().code() == shm::StatusCode::kTimeout) return;  // spurious wakeup
  ++stats_.client_deaths;
  spdlog::info("client {} '{}' pid {} is gone ({})", c->id, c->name, c->pid,
               packet.status().ToString());
  RemoveClient(client_id, 1, now_ns);
}

void ArbiterImpl::RemoveClient(uint32_t client_id, uint64_t reason, uint64_t now_ns) {
  auto it = clients_.find(client_id);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  DelFd(c.conn.fd());
  DelFd(c.chan.doorbell_fd());
  if (c.holding && gpus_[c.hold_gpu].holder == c.id) gpus_[c.hold_gpu].holder = 0;
  // A checkpointed client is thawed (it runs on, disconnected) and then holds memory again.
  const bool thawed = c.where == Where::kCheckpointed && ThawProcess(c.pid, c.name);
  // A live process the arbiter disconnects keeps its device memory: its reservation stays,
  // as an orphan, until the process exits or registers again (arbiter_orphans.cc).
  if (!MaybeOrphan(c, reason, thawed, now_ns)) Unreserve(c);
  Record(shm::EventType::kUnregister, &c, shm::kNoGpu, reason);
  const policy::FunctionId fid = c.fid;
  fid_to_client_[fid] = 0;
  clients_.erase(it);
  if (!stopping_) Deliver(now_ns, policy::FunctionGone{fid});
  PumpTransfers(now_ns);
}

bool ArbiterImpl::ThawProcess(int pid, const std::string& name) {
  if (!driver_ || pid <= 0) return false;
  const int state = driver_->ProcessState(pid);
  shm::Status s;
  if (state == CU_PROCESS_STATE_CHECKPOINTED) {
    s = driver_->RestoreAndUnlock(pid, 0, 0);  // no GPU pairs: back where it was
  } else if (state == CU_PROCESS_STATE_LOCKED) {
    s = driver_->Unlock(pid);
  } else {
    return false;  // running, gone, failed or unknown: nothing to undo
  }
  if (!s.ok()) {
    spdlog::error("pid {} ('{}') is left {} by a checkpoint and could not be thawed: {}", pid,
                  name, state == CU_PROCESS_STATE_LOCKED ? "locked" : "checkpointed",
                  s.ToString());
    return false;
  }
  ++stats_.restores;
  spdlog::warn("pid {} ('{}') was left {} by a checkpoint; restored and unlocked", pid, name,
               state == CU_PROCESS_STATE_LOCKED ? "locked" : "checkpointed");
  return state == CU_PROCESS_STATE_CHECKPOINTED;
}

Client* ArbiterImpl::ById(uint32_t id) {
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : it->second.get();
}

Client* ArbiterImpl::ByFid(policy::FunctionId fid) {
  if (fid >= fid_to_client_.size() || fid_to_client_[fid] == 0) return nullptr;
  return ById(fid_to_client_[fid]);
}

}  // namespace gshare::arbiter
