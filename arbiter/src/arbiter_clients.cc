// Registration (validation against capacity and tenants' limits, GPU assignment, resident
// claims, channel hand-over) and liveness: a client's death is its connection's EOF or its
// registering process's exit (its pidfd), seen by epoll at once; everything it held (token,
// reservation, transfers, policy state) is reclaimed in the same loop iteration. Requests come
// complete from the RegistrationIntake (its own thread): nothing here waits for a peer.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "gshare/common/units.h"
#include "gshare/shm/unix_socket.h"

namespace gshare::arbiter {
std::optional<GpuIndex> ArbiterImpl::IndexOf(DeviceOrdinal ordinal) const {
  for (const GpuIndex g : gpus_.indices())
    if (gpus_[g].ordinal == ordinal) return g;
  return std::nullopt;
}

void ArbiterImpl::OnArrivals(uint64_t now_ns) {
  for (Arrival& a : intake_->TakeArrivals()) {
    if (a.query) {
      AnswerShareQuery(std::move(a), now_ns);
    } else {
      Register(std::move(a), now_ns);
    }
  }
  // The intake's own refusals, folded into the statistics (it runs on its own thread).
  const IntakeStats now = intake_->stats();
  const uint64_t refused = (now.refused_pending - intake_seen_.refused_pending) +
                           (now.malformed - intake_seen_.malformed) +
                           (now.out_of_fds - intake_seen_.out_of_fds);
  stats_.refusals += refused;
  stats_.registration_timeouts += now.timeouts - intake_seen_.timeouts;
  stats_.registration_pending_refused += now.refused_pending - intake_seen_.refused_pending;
  stats_.registration_malformed += now.malformed - intake_seen_.malformed;
  stats_.registration_out_of_fds += now.out_of_fds - intake_seen_.out_of_fds;
  intake_seen_ = now;
}

void ArbiterImpl::Refuse(Arrival& a, const std::string& why, uint64_t* counter) {
  ++stats_.refusals;
  if (counter != nullptr) ++*counter;
  const shm::PeerCredentials& peer = a.conn.peer();
  spdlog::warn("pid {} uid {} ('{}'): registration refused: {}", peer.pid, peer.uid,
               a.request.function_name, why);
  (void)a.conn.Refuse(why.substr(0, shm::kReasonSize - 1), epoch_, std::chrono::nanoseconds(0));
  reaper_.Dispose(std::move(a.conn));
}

std::string ArbiterImpl::Validate(const shm::RegisterRequest& req,
                                  const shm::PeerCredentials& peer,
                                  const std::vector<gid_t>& groups) const {
  if (stopping_) return "the arbiter is shutting down";
  if (clients_.size() >= config_.max_clients)
    return "the arbiter serves its maximum of " + std::to_string(config_.max_clients) + " clients";
  uint64_t largest = 0;
  for (const GpuIndex g : book_.gpus()) largest = std::max(largest, book_.usable(g));
  if (req.quota_bytes > largest)
    return "GSHARE_VGPU_MEMORY " + FormatByteSize(req.quota_bytes) +
           " exceeds the largest managed GPU's usable memory " + FormatByteSize(largest);
  if (req.current_gpu != shm::kNoGpu && !IndexOf(DeviceOrdinal{req.current_gpu}))
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

void ArbiterImpl::OnUnenforceable(const Client& c, uint64_t now_ns) {
  if (const uint64_t backoff = limits_.Unenforceable(c.uid, now_ns); backoff != 0)
    spdlog::warn("uid {}: holders disconnected for ignoring preemption again; its registrations "
                 "are refused for {} ms",
                 c.uid, backoff / 1'000'000);
}

namespace {

// The start time of process `pid` (field 22 of /proc/PID/stat, clock ticks since boot), 0 if
// unknown: with the pid, it names one process (a reused pid has another start time).
uint64_t StartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

// " pod NAMESPACE/NAME" for the log, "" when the client did not name its pod.
std::string PodText(const Client& c) {
  if (c.pod_name.empty() && c.pod_namespace.empty()) return {};
  return " pod " + (c.pod_namespace.empty() ? std::string("?") : c.pod_namespace) + "/" +
         (c.pod_name.empty() ? std::string("?") : c.pod_name);
}

}  // namespace

bool ArbiterImpl::BelieveResidentClaim(const Arrival& a, GpuIndex g, int driver_state,
                                       uint64_t now_ns, std::string* why) {
  const shm::PeerCredentials& peer = a.conn.peer();
  const uint64_t quota = a.request.quota_bytes;
  if (!book_.Fits(g, quota)) {
    *why = "it does not fit GPU " + std::to_string(gpus_[g].ordinal.value()) + " (" +
           FormatByteSize(book_.reserved(g)) + " of " + FormatByteSize(book_.usable(g)) +
           " reserved)";
    return false;
  }
  if (driver_state == DriverLib::kNoCudaState && driver_ && driver_->can_query_state()) {
    *why = "the driver knows no CUDA state of the process";
    return false;
  }
  // A process this arbiter disconnected alive (its orphan was just replaced) holds its memory:
  // the arbiter saw it. Otherwise the claim can only be true right after a restart, once.
  if (a.had_orphan) return true;
  const uint64_t window = static_cast<uint64_t>(config_.resident_claim_window.count());
  if (now_ns - started_ns_ > window) {
    *why = "the arbiter started " + std::to_string((now_ns - started_ns_) / 1'000'000'000) +
           " s ago (resident_claim_window) and has no orphan of the process";
    return false;
  }
  const uint64_t start = StartTime(peer.pid);
  if (const auto it = resident_claims_.find(peer.pid);
      it != resident_claims_.end() && it->second == start) {
    *why = "the process claimed to be resident before in this arbiter's run";
    return false;
  }
  if (resident_claims_.size() >= 2 * std::max<size_t>(config_.max_clients, 1)) {
    for (auto it = resident_claims_.begin(); it != resident_claims_.end();)
      it = StartTime(it->first) != it->second ? resident_claims_.erase(it) : std::next(it);
  }
  resident_claims_[peer.pid] = start;
  return true;
}

bool ArbiterImpl::ResolveView(Arrival& a) {
  std::vector<ManagedGpu> managed;
  for (const GpuIndex g : gpus_.indices()) managed.push_back({gpus_[g].ordinal, gpus_[g].uuid});
  std::string why;
  a.view = ResolveDeviceView(a.request.device_uuids, managed, &why);
  if (!why.empty()) {
    Refuse(a, why);
    return false;
  }
  uint32_t& current = a.request.current_gpu;
  if (a.view.reported && current != shm::kNoGpu) {  // its device index (the decoder bounded it)
    if (a.view.device_gpus[current] == shm::kNoGpu) {
      Refuse(a, "its memory is on its device " + std::to_string(current) +
                    ", which is not a GPU this arbiter manages (" + DescribeView(a.view) + ")");
      return false;
    }
    current = a.view.device_gpus[current];
  }
  return true;
}

void ArbiterImpl::Register(Arrival a, uint64_t now_ns) {
  const shm::PeerCredentials peer = a.conn.peer();
  if (!ResolveView(a)) return;
  if (std::string why = Validate(a.request, peer, a.groups); !why.empty()) return Refuse(a, why);
  std::string why;
  if (const auto v = limits_.Check(peer.uid, peer.pid, now_ns, &why);
      v != TenantLimits::Verdict::kAllowed)
    return Refuse(a, why, v == TenantLimits::Verdict::kBackoff ? &stats_.refusals_backoff
                                                               : &stats_.refusals_limit);
  // A re-registration: the process's state is asked of the driver by the worker (a previous
  // arbiter that died between checkpointing and restoring it left it frozen, and a resident
  // claim is checked against it); so is a late first registration's (a process that ran
  // stand-alone, its memory possibly on a GPU); a first registration needs nothing of the driver.
  if ((a.request.flags & (shm::kFlagReRegister | shm::kFlagLate)) != 0 && worker_ && driver_ &&
      driver_->can_query_state()) {
    StartRegistrationQuery(std::move(a), now_ns);
    return;
  }
  FinishRegistration(std::move(a), DriverLib::kNoAnswer, now_ns);
}

GpuIndex ArbiterImpl::RegistrationGpu(const shm::RegisterRequest& req, pid_t pid,
                                      uint64_t now_ns, const DeviceView& view) const {
  // Where it already is (re-registration: its memory, or its process when swapped out).
  if (req.current_gpu != shm::kNoGpu) return *IndexOf(DeviceOrdinal{req.current_gpu});
  // An MPS client: the GPU whose server its process joined at cuInit, the one its share was
  // answered for (chosen then; memory reserved since may make another GPU the emptiest now).
  if (req.mps_share != 0 && pid != 0) {
    const auto answered = corun_.CorunGpuOf(pid, now_ns);
    if (answered && view.Sees(*answered)) return *answered;
    // Without an answer, the GPUs its process sees say where its server is (an MPS client sees
    // its daemon's GPUs alone); an arbiter that cannot tell places it as any new vGPU.
    if (answered) {
      spdlog::warn("pid {}: registers as an MPS client of GPU {}'s daemon, which its driver does "
                   "not show it ({}): placed on a GPU it sees", pid, gpus_[*answered].ordinal,
                   DescribeView(view));
    } else if (!view.reported) {
      spdlog::warn("pid {}: registers as an MPS client at {}% without a co-run share answered to "
                   "it: placed as any new vGPU, which may not be the GPU of its MPS server",
                   pid, req.mps_share);
    }
  }
  // Else the undrained GPU with the most memory left to promise, among those its process sees.
  GpuIndex g = view.reported && !view.visible.empty() ? view.visible.front() : GpuIndex{0};
  for (const GpuIndex i : gpus_.indices())
    if (view.Sees(i) &&
        ((gpus_[g].drained && !gpus_[i].drained) ||  // gshare-ctl drain
         (gpus_[g].drained == gpus_[i].drained && book_.unreserved(i) > book_.unreserved(g))))
      g = i;
  return g;
}

void ArbiterImpl::PlaceAtRegistration(Client& c, RegistrationClaim r, uint64_t now_ns) {
  // A vGPU that is (or may become) resident holds a reservation of its whole quota, because
  // the shim allocates within its quota without asking. A fresh client whose quota fits starts
  // resident (shadow: the policy believes it is on the host and will ask for a swap-in, which
  // then completes at once); one that does not fit — and a resident claim that cannot be true —
  // starts swapped out: the order is in the channel before the client ever sees it, and nothing
  // is reserved for it until it acknowledges.
  const bool fits = book_.Fits(c.session.gpu(), c.quota);
  if (r == RegistrationClaim::kSwappedOut) {
    // Out, as its session starts: the policy, too, believes it is on the host.
  } else if (r == RegistrationClaim::kBelievedResident || (r == RegistrationClaim::kFresh && fits)) {
    Transit(c, c.session.ClaimResident());
    c.shadow = true;
    Reserve(c, c.session.gpu());
  } else {
    // Resident until it acknowledges the swap-out (it holds nothing yet).
    Transit(c, c.session.ClaimResident());
    c.shadow = true;
    Transfer t;
    t.op = shm::SwapOp::kSwapOut;
    t.gpu = c.session.gpu();
    IssueOrder(c, t, gpus_[c.session.gpu()].ordinal, now_ns,
               /*record=*/false);  // recorded in Admit
    (void)c.transfers.Queue(t);
  }
}

bool ArbiterImpl::ConnectClient(Client& c, Arrival& a, uint64_t now_ns) {
  shm::RegisterReply reply;
  reply.accepted = true;
  reply.gpu = gpus_[c.session.gpu()].ordinal.value();
  reply.client_id = c.id;
  reply.channel_size = shm::kChannelSegmentSize;
  reply.quota_bytes = c.quota;
  reply.arbiter_epoch = epoch_;
  reply.reason = std::string("fail_mode=") + FailModeName(config_.fail_mode);
  if (c.view.reported) reply.device_gpus = c.view.device_gpus;
  // The reply is one small packet on a connection with nothing queued: it is never waited for.
  if (auto s = a.conn.Accept(reply, c.chan.channel_fd(), c.chan.doorbell_fd(),
                             std::chrono::nanoseconds(0));
      !s.ok()) {
    spdlog::warn("pid {}: accept failed: {}", c.pid, s.ToString());
    reaper_.Dispose(std::move(a.conn));
    return false;
  }
  c.chan.CloseChannelFd();
  c.conn = std::move(a.conn);
  if (auto s = poller_.Add(c.conn.fd(), kTagConn | c.id, /*hangup=*/true); !s.ok()) {
    spdlog::error("{}", s.ToString());
    reaper_.Dispose(std::move(c.conn));
    return false;
  }
  c.doorbell = DoorbellGuard(
      {config_.doorbell_rate, static_cast<uint64_t>(config_.doorbell_flood_disconnect.count())},
      now_ns);
  if (auto s = poller_.Add(c.chan.doorbell_fd(), kTagDoorbell | c.id); !s.ok()) {
    spdlog::error("{}", s.ToString());
    poller_.Remove(c.conn.fd());
    reaper_.Dispose(std::move(c.conn));
    return false;
  }
  // The registering process's exit ends the client even if its connection lives on in another
  // process (a forked child inherits it): a pidfd polls readable once its process exited.
  if (c.conn.pidfd() >= 0) c.pid_watched = poller_.Add(c.conn.pidfd(), kTagClientExit | c.id).ok();
  return true;
}

void ArbiterImpl::Admit(std::unique_ptr<Client> c, bool reregister, uint64_t now_ns) {
  const DeviceOrdinal ordinal = gpus_[c->session.gpu()].ordinal;
  limits_.Added(c->uid, c->pid);
  ++stats_.registrations;
  if (reregister) ++stats_.re_registrations;
  spdlog::info("client {} '{}'{} pid {} uid {}: quota {}, SLO {} ms, GPU {}{}{}{}", c->id, c->name,
               PodText(*c), c->pid, c->uid, FormatByteSize(c->quota), c->slo_ms, ordinal,
               reregister ? " (re-registration)" : "",
               ReservedOn(*c) ? "" : ", starts swapped out",
               c->view.confined ? "; confined to the GPUs its process sees (" +
                                      DescribeView(c->view) + "): it stays on GPU " +
                                      std::to_string(ordinal.value())
                                : std::string());
  Record(shm::EventType::kRegister, c.get(), ordinal, c->quota, c->slo_ms,
         static_cast<uint64_t>(c->pid), c->uid);
  const auto packed_name = shm::PackEventName(c->name);  // for gshare-trace
  Record(shm::EventType::kClientName, c.get(), ordinal, packed_name[0], packed_name[1],
         packed_name[2], packed_name[3]);
  if (!c->transfers.empty()) RecordOrderBegin(*c, c->transfers.front(), ordinal);

  const policy::FunctionSpec spec = SpecOf(*c);
  c->fid = clients_.Bind(c->id);
  const policy::FunctionId fid = c->fid;
  Client& admitted = clients_.Add(std::move(c));
  Deliver(now_ns, policy::FunctionRegistered{fid, spec});
  if (clients_.Find(admitted.id) != nullptr) AdviseShare(admitted);
}

void ArbiterImpl::FinishRegistration(Arrival a, int driver_state, uint64_t now_ns) {
  const shm::PeerCredentials peer = a.conn.peer();
  const shm::RegisterRequest& req = a.request;
  // Decided again: the arbiter may have changed while the driver was asked.
  if (std::string why = Validate(req, peer, a.groups); !why.empty()) return Refuse(a, why);
  if (ProcessExited(a.conn.pidfd())) {  // gone meanwhile: nothing to register
    reaper_.Dispose(std::move(a.conn));
    return;
  }
  // An orphan of this process (disconnected while alive) is replaced by this registration's own
  // reservation below: counted once, and no overshoot when it comes back resident.
  a.had_orphan = OnRegistrationFrom(peer.pid, now_ns);

  auto c = std::make_unique<Client>();
  c->id = clients_.NextId();
  c->pid = peer.pid;
  c->uid = peer.uid;
  c->gid = peer.gid;
  c->mps_share = req.mps_share;
  c->view = a.view;
  const GpuIndex gpu = RegistrationGpu(req, peer.pid, now_ns, c->view);
  corun_.ForgetPromise(peer.pid);  // its share's memory is the client's own quota from now on
  c->compute_demand_pct = req.compute_demand_pct;
  c->bandwidth_demand_pct = req.bandwidth_demand_pct;
  c->quota = req.quota_bytes;
  c->slo_ms = req.slo_ms;
  c->name = req.function_name.empty() ? "pid" + std::to_string(peer.pid) : req.function_name;
  // The pod (attribution), checked by the decoder (DNS-1123 rules) and again here: a tenant
  // may send anything, and these become metric labels.
  c->pod_namespace = req.pod_namespace;
  c->pod_name = req.pod_name;
  for (auto [field, value] : {std::pair{"pod_namespace", &c->pod_namespace},
                              std::pair{"pod_name", &c->pod_name}}) {
    if (value->empty()) continue;
    const std::string why = value == &c->pod_name ? shm::PodNameProblem(*value)
                                                  : shm::PodNamespaceProblem(*value);
    if (why.empty()) continue;
    spdlog::warn("pid {} uid {}: registration's {} {}: dropped", peer.pid, peer.uid, field, why);
    value->clear();
  }
  c->last_use_ns = now_ns;
  c->registered_ns = now_ns;
  Transit(*c, c->session.AssignGpu(gpu));
  // An MPS client's context is on its GPU already (made at its cuInit): counted before its
  // vGPU's place is decided, for as long as its process is the server's client.
  ReserveContext(*c);
  const bool reregister = (req.flags & shm::kFlagReRegister) != 0;
  // A late first registration (the process ran stand-alone) says what it holds like a
  // re-registration: its resident claim is checked the same way.
  const bool describes_holdings = reregister || (req.flags & shm::kFlagLate) != 0;
  const bool claims_resident = describes_holdings && (req.flags & shm::kFlagResident) != 0;
  // A re-registration that is not resident is swapped out: it holds nothing on any GPU (its
  // reservation, if any, went with the arbiter that had it) and is swapped in on demand.
  RegistrationClaim residency = !describes_holdings ? RegistrationClaim::kFresh : RegistrationClaim::kSwappedOut;
  if (claims_resident) {
    std::string why;
    residency = BelieveResidentClaim(a, c->session.gpu(), driver_state, now_ns, &why)
                    ? RegistrationClaim::kBelievedResident
                    : RegistrationClaim::kDisbelievedResident;
    if (residency == RegistrationClaim::kDisbelievedResident) {
      ++stats_.resident_claims_refused;
      spdlog::warn(
          "client '{}' pid {} uid {} claims to be resident on GPU {}, which cannot be "
          "true ({}): it is accepted swapped out and ordered to move its memory off the "
          "GPU first",
          c->name, peer.pid, peer.uid, gpus_[c->session.gpu()].ordinal, why);
    }
  }
  shm::ChannelInit init;
  init.client_id = c->id;
  init.gpu = gpus_[c->session.gpu()].ordinal.value();
  init.arbiter_epoch = epoch_;
  init.quota_bytes = c->quota;
  init.slice_ns = static_cast<uint64_t>(config_.slice.count());
  init.slo_ms = c->slo_ms;
  auto chan = shm::ArbiterChannel::Create(init);
  if (!chan.ok()) {
    spdlog::error("pid {}: cannot create a channel: {}", peer.pid, chan.status().ToString());
    ReleaseContext(*c);
    return Refuse(a, "the arbiter could not create a channel (" + chan.status().message() + ")");
  }
  c->chan = std::move(*chan);
  PlaceAtRegistration(*c, residency, now_ns);
  if (!ConnectClient(*c, a, now_ns)) {
    Unreserve(*c);
    ReleaseContext(*c);
    return;
  }
  Admit(std::move(c), reregister, now_ns);
}

void ArbiterImpl::ReleaseFid(policy::FunctionId fid) {
  // Reusable once the policy has handled its FunctionGone (the end of the Deliver in progress,
  // if any): policy.h, protocol item 5.
  clients_.Retire(fid);
  if (!delivering_) clients_.Recycle();
}

void ArbiterImpl::OnClientExit(uint32_t client_id, uint64_t now_ns) {
  Client* c = clients_.Find(client_id);
  if (c == nullptr || !ProcessExited(c->conn.pidfd())) return;
  // Its connection would have told us too, unless another process holds a copy of it.
  ++stats_.client_deaths;
  ++stats_.exited_with_connection_held;
  spdlog::info("client {} '{}' pid {} has exited (its connection may live on in a child it "
               "forked): gone",
               c->id, c->name, c->pid);
  RemoveClient(client_id, Unregister::kDied, now_ns);
}

void ArbiterImpl::OnConnectionEvent(uint32_t client_id, uint64_t now_ns) {
  Client* c = clients_.Find(client_id);
  if (c == nullptr) return;
  std::vector<shm::UniqueFd> carried;  // descriptors a peer sent anyway (kernels < 6.16)
  auto packet = shm::ReceivePacket(c->conn.fd(), std::chrono::nanoseconds(0), &carried);
  for (auto& fd : carried) reaper_.Dispose(std::move(fd));
  if (packet.ok()) {
    // The only message a registered client sends is Goodbye (it is leaving cleanly). Its
    // channel is read once more first: a release it wrote just before (its last burst's end)
    // may not have been seen yet when both wake the same loop iteration.
    spdlog::info("client {} '{}' said goodbye", c->id, c->name);
    if (c->session.op() == DriverOp::kNone) PollClient(*c, now_ns);
    if (clients_.Find(client_id) == nullptr) return;  // the last read found it malformed
    RemoveClient(client_id, Unregister::kClean, now_ns);
    return;
  }
  if (packet.status().code() == shm::StatusCode::kTimeout) return;  // spurious wakeup
  ++stats_.client_deaths;
  spdlog::info("client {} '{}' pid {} is gone ({})", c->id, c->name, c->pid,
               packet.status().ToString());
  RemoveClient(client_id, Unregister::kDied, now_ns);
}

const char* UnregisterName(Unregister r) {
  switch (r) {
    case Unregister::kClean:
      return "clean";
    case Unregister::kDied:
      return "died";
    case Unregister::kMalformed:
      return "malformed_channel";
    case Unregister::kOrderTimeout:
      return "order_timeout";
    case Unregister::kUnenforceable:
      return "unenforceable";
    case Unregister::kFlooding:
      return "doorbell_flood";
  }
  return "other";
}

void ArbiterImpl::RemoveClient(uint32_t client_id, Unregister reason, uint64_t now_ns) {
  Client* found = clients_.Find(client_id);
  if (found == nullptr) return;
  Client& c = *found;
  poller_.Remove(c.conn.fd());
  poller_.Remove(c.chan.doorbell_fd());
  if (c.pid_watched) poller_.Remove(c.conn.pidfd());
  c.pid_watched = false;
  if (c.session.op() != DriverOp::kNone) {
    // A driver operation on its process is in flight: what the process holds when it ends is
    // known only then, so the client leaves at its completion (arbiter_driver.cc).
    if (!c.removal_pending) {
      c.removal_pending = reason;
      spdlog::debug("client {}: removal ({}) waits for its {} to complete", c.id,
                    UnregisterName(reason), DriverOpName(c.session.op()));
    }
    return;
  }
  leases_.Ended(client_id);  // an offer in its channel goes with it
  if (c.session.holding()) DropHold(c);
  if (c.session.where() == Where::kCheckpointed) {
    // Frozen by a checkpoint: its process is thawed by the worker (it runs on, disconnected);
    // if that restores its memory, the reservation is kept as an orphan then.
    StartThawOfLeaving(c, reason, now_ns);
  } else if (!MaybeOrphan(c, reason, now_ns)) {
    // A live process the arbiter disconnects keeps its device memory: its reservation stays,
    // as an orphan, until the process exits or registers again (arbiter_orphans.cc).
    Unreserve(c);
  }
  ReleaseContext(c);  // (handed to its orphan, if one was made: then nothing is left here)
  Record(shm::EventType::kUnregister, &c, kNoOrdinal, static_cast<uint64_t>(reason));
  limits_.Removed(c.uid, c.pid, now_ns);
  if (reason == Unregister::kUnenforceable) OnUnenforceable(c, now_ns);
  reaper_.Dispose(std::move(c.conn));  // its queue may hold descriptors a peer sent
  const policy::FunctionId fid = c.fid;
  clients_.Remove(client_id);
  if (!stopping_) {
    Deliver(now_ns, policy::FunctionGone{fid});
    ReleaseFid(fid);
  }
  PumpTransfers(now_ns);
}

}  // namespace gshare::arbiter
