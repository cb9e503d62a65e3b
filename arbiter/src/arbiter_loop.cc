// The arbiter's event loop: waits (EventPoller) on the registration intake, client connections
// (liveness) and doorbells, the driver worker, the control socket, a timer for slice ends /
// preemption grace / policy wakeups, SIGTERM/SIGINT and Stop(), and dispatches each by its tag;
// doorbell flooding (DoorbellGuard); plus creation, shutdown and statistics.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "counters.h"
#include "gshare/common/units.h"

namespace gshare::arbiter {

uint64_t NowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

shm::Result<std::vector<GpuInfo>> ResolveGpus(const ArbiterConfig& config) {
  std::vector<uint64_t> memory;
  std::vector<std::array<uint8_t, 16>> uuids;  // empty: not known
  if (config.gpu_memory_bytes) {
    uint32_t count = config.gpu_count;
    for (uint32_t g : config.gpus) count = std::max(count, g + 1);
    memory.assign(count, *config.gpu_memory_bytes);
  } else {
    auto lib = DriverLib::Open(config.libcuda);
    if (!lib.ok())
      return shm::Status(shm::StatusCode::kUnavailable,
                         "libcuda: " + lib.status().message() +
                             " (set gpu_memory to run without asking the driver)");
    auto mem = lib->DeviceMemory();
    if (!mem.ok()) return shm::Status(mem.status().code(), "libcuda: " + mem.status().message());
    memory = std::move(*mem);
    auto ids = lib->DeviceUuids();
    if (!ids.ok()) return shm::Status(ids.status().code(), "libcuda: " + ids.status().message());
    uuids = std::move(*ids);
  }
  auto uuid_of = [&uuids](uint32_t g) {
    return g < uuids.size() ? uuids[g] : std::array<uint8_t, 16>{};
  };
  std::vector<GpuInfo> gpus;
  if (config.gpus.empty()) {
    for (uint32_t i = 0; i < memory.size(); ++i) gpus.push_back({i, memory[i], uuid_of(i)});
  } else {
    for (uint32_t g : config.gpus) {
      if (g >= memory.size())
        return shm::Status(shm::StatusCode::kInvalidArgument,
                           "gpus: GPU " + std::to_string(g) + " does not exist (" +
                               std::to_string(memory.size()) + " visible)");
      gpus.push_back({g, memory[g], uuid_of(g)});
    }
  }
  if (gpus.empty()) return shm::Status(shm::StatusCode::kUnavailable, "gpus: no GPU to manage");
  for (const auto& g : gpus) {
    if (g.memory_bytes <= config.memory_reserve_bytes)
      return shm::Status(shm::StatusCode::kInvalidArgument,
                         "memory_reserve: " + FormatByteSize(config.memory_reserve_bytes) +
                             " leaves nothing of GPU " + std::to_string(g.ordinal) + "'s " +
                             FormatByteSize(g.memory_bytes));
  }
  return gpus;
}

shm::Result<std::unique_ptr<Arbiter>> Arbiter::Create(const ArbiterConfig& config,
                                                     std::vector<GpuInfo> gpus,
                                                     bool handle_signals) {
  auto impl = std::make_unique<ArbiterImpl>(config, std::move(gpus));
  if (auto s = impl->Init(handle_signals); !s.ok()) return s;
  return std::unique_ptr<Arbiter>(std::move(impl));
}

ArbiterImpl::ArbiterImpl(ArbiterConfig config, std::vector<GpuInfo> gpus)
    : config_(std::move(config)) {
  std::vector<uint64_t> usable;
  for (const auto& g : gpus) {
    GpuState st;
    st.ordinal = DeviceOrdinal{g.ordinal};
    st.uuid = g.uuid;
    st.memory_bytes = g.memory_bytes;
    gpus_.push_back(std::move(st));
    usable.push_back(g.memory_bytes - config_.memory_reserve_bytes);
  }
  book_ = ReservationBook(std::move(usable));
  std::vector<DeviceOrdinal> ordinals;
  for (const auto& g : gpus_) ordinals.push_back(g.ordinal);
  corun_ = CorunBook(config_.corun, ordinals);
  limits_ = TenantLimits({config_.max_clients_per_uid, config_.max_clients_per_pid,
                          config_.registration_rate_per_uid, config_.mps_terminations_per_uid,
                          static_cast<uint64_t>(config_.mps_termination_window.count())});
}

namespace {

// The policy the config names, over the GPUs' usable memory and co-run marks.
shm::Result<std::unique_ptr<policy::Policy>> MakeArbiterPolicy(const ArbiterConfig& config,
                                                               const ReservationBook& book,
                                                               const CorunBook& corun) {
  policy::PolicyConfig pc;
  for (const GpuIndex g : book.gpus()) {
    policy::GpuSpec spec;
    spec.memory_bytes = book.usable(g);
    spec.corun = corun.Enabled(g);
    spec.max_clients = config.corun.max_members;
    pc.gpus.push_back(spec);
  }
  pc.slice = std::chrono::duration_cast<std::chrono::microseconds>(config.slice).count();
  pc.swap_out_copies = true;  // a swap-out copies the vGPU to the host before its memory is free
  pc.corun_across_domains = config.corun.fault_domain == CorunFaultDomain::kAny;
  auto made = policy::Make(config.policy, pc);
  if (!made.ok()) return shm::Status(made.status().code(), "policy: " + made.status().message());
  return std::move(*made);
}

// The registration socket, served by the intake's thread.
shm::Result<std::unique_ptr<RegistrationIntake>> StartIntake(const ArbiterConfig& config,
                                                             uint64_t epoch, FdReaper* reaper) {
  auto listener = shm::RegistrationListener::Listen(config.socket_path, config.socket_mode);
  if (!listener.ok())
    return shm::Status(listener.status().code(), "socket: " + listener.status().message());
  if (!listener->refuses_descriptors())
    spdlog::warn("socket: this kernel cannot refuse descriptors sent to the arbiter (SO_PASSRIGHTS "
                 "needs Linux 6.16); they are received and closed off the loop");
  IntakeLimits limits;
  limits.max_pending_per_uid = config.max_pending_registrations_per_uid;
  limits.max_pending = config.max_pending_registrations;
  limits.request_timeout_ns = static_cast<uint64_t>(config.registration_timeout.count());
  limits.arbiter_epoch = epoch;
  return RegistrationIntake::Start(std::move(*listener), limits, reaper);
}

// The control socket with its access lists, or null when it is off.
shm::Result<std::unique_ptr<ControlServer>> OpenControl(const ArbiterConfig& config) {
  const std::string path = ControlSocketPath(config);
  if (path.empty()) return std::unique_ptr<ControlServer>();
  ControlAcl acl;
  acl.self = ::geteuid();
  acl.read_uids = config.control_read_uids;
  acl.read_gids = config.control_read_gids;
  acl.admin_uids = config.control_admin_uids;
  acl.admin_gids = config.control_admin_gids;
  auto control = ControlServer::Listen(path, config.control_socket_mode, std::move(acl));
  if (!control.ok())
    return shm::Status(control.status().code(), "control_socket: " + control.status().message());
  return std::move(*control);
}

}  // namespace

shm::Status ArbiterImpl::Init(bool handle_signals) {
  started_ns_ = NowNs();
  std::random_device rd;
  epoch_ = (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;

  for (uint32_t ordinal : config_.corun.gpus)
    if (!IndexOf(DeviceOrdinal{ordinal}))
      return shm::Status(shm::StatusCode::kInvalidArgument,
                         "corun_gpus: GPU " + std::to_string(ordinal) + " is not managed (gpus)");
  auto made = MakeArbiterPolicy(config_, book_, corun_);
  if (!made.ok()) return made.status();
  policy_ = std::move(*made);

  // The driver is optional: without it (or without its checkpoint API) the arbiter schedules
  // cooperative clients but cannot enforce on one that ignores preemption.
  if (auto lib = DriverLib::Open(config_.libcuda); lib.ok()) {
    driver_ = std::move(*lib);
  } else {
    spdlog::warn("libcuda: {}", lib.status().message());
  }
  if (!driver_ || !driver_->can_checkpoint())
    spdlog::warn("no driver checkpoint API: clients that ignore preemption cannot be enforced on");

  if (!config_.event_ring_path.empty()) {
    auto ring = shm::EventRingWriter::CreateFile(config_.event_ring_path,
                                                 config_.event_ring_capacity, epoch_,
                                                 config_.event_ring_mode, config_.event_ring_gid);
    if (!ring.ok()) return shm::Status(ring.status().code(), "event_ring: " + ring.status().message());
    ring_ = std::move(*ring);
  }

  if (!config_.metrics_address.empty()) {
    auto m = MetricsServer::Start(config_.metrics_address);
    if (!m.ok()) return m.status();
    metrics_ = std::move(*m);
  }
  telemetry_.gpus.resize(gpus_.size());
  telemetry_.recent.resize(gpus_.size());
  if (metrics_) metrics_->Publish(MetricsText(NowNs()));

  auto intake = StartIntake(config_, epoch_, &reaper_);
  if (!intake.ok()) return intake.status();
  intake_ = std::move(*intake);
  // Driver calls about processes run on the worker (arbiter_driver.cc), never on the loop.
  if (driver_) {
    auto worker = DriverWorker::Start(kDriverWorkerThreads);
    if (!worker.ok()) return worker.status();
    worker_ = std::move(*worker);
  }
  auto control = OpenControl(config_);
  if (!control.ok()) return control.status();
  control_ = std::move(*control);

  if (auto s = poller_.Open({kTagTimer, kTagStop, kTagSignal}, handle_signals); !s.ok()) return s;
  // SIGPIPE would kill the daemon when a client dies mid-send; sends use MSG_NOSIGNAL anyway.
  ::signal(SIGPIPE, SIG_IGN);
  if (auto s = poller_.Add(intake_->fd(), kTagIntake); !s.ok()) return s;
  if (worker_) {
    if (auto s = poller_.Add(worker_->fd(), kTagDriver); !s.ok()) return s;
  }
  if (control_) {
    if (auto s = poller_.Add(control_->fd(), kTagControl); !s.ok()) return s;
  }
  if (auto s = StartMpsDaemons(); !s.ok()) return s;

  const uint64_t now = NowNs();
  Deliver(now, policy::Started{});
  for (const GpuIndex g : gpus_.indices())
    spdlog::info("managing GPU {}: {} ({} usable)", gpus_[g].ordinal,
                 FormatByteSize(gpus_[g].memory_bytes), FormatByteSize(book_.usable(g)));
  spdlog::info("arbiter epoch {:#x} listening on {} with policy '{}', slice {} us; control "
               "socket {}",
               epoch_, intake_->path(), policy_->name(),
               std::chrono::duration_cast<std::chrono::microseconds>(config_.slice).count(),
               control_ ? control_->path() : std::string("off"));
  return {};
}

void ArbiterImpl::Stop() { poller_.Wake(); }

void ArbiterImpl::ArmTimer(uint64_t now_ns) {
  uint64_t at = NextDeadlineNs();
  if (stopping_) at = std::min(at, stop_deadline_ns_);
  if (metrics_dirty_) at = std::min(at, metrics_published_ns_ + kMetricsPeriodNs);
  poller_.ArmAt(at == UINT64_MAX ? at : std::max(at, now_ns + 1));
}

void ArbiterImpl::OnDoorbell(uint32_t id, uint64_t now_ns) {
  Client* c = clients_.Find(id);
  if (c == nullptr) return;
  // One read per wake-up, whatever the count: the work a doorbell causes is one loop iteration,
  // and every iteration reads each client's channel once (PollAll).
  auto rings = c->chan.DrainDoorbell();
  switch (c->doorbell.OnWake(rings.ok() ? *rings : 1, now_ns)) {
    case DoorbellGuard::Verdict::kServe:
      return;
    case DoorbellGuard::Verdict::kMute:
      ++stats_.doorbell_mutes;
      WatchDoorbell(*c, false);
      deadlines_.Schedule(c->doorbell.unmute_ns(), c->id, DeadlineQueue::Kind::kDoorbellUnmute);
      if (c->doorbell.episode_began())  // once per flooding episode: the log stays bounded
        spdlog::warn("client {} '{}' (pid {}) rings its doorbell more than {} times a second ({} "
                     "rings so far); its doorbell is ignored {} ms at a time while this lasts",
                     c->id, c->name, c->pid, config_.doorbell_rate, c->doorbell.rings(),
                     c->doorbell.mute_ns() / 1'000'000);
      return;
    case DoorbellGuard::Verdict::kDisconnect:
      ++stats_.flood_disconnects;
      spdlog::error("client {} '{}' (pid {}) has flooded its doorbell for {} ms ({} rings, muted "
                    "{} times); disconnecting it (doorbell_flood_disconnect)",
                    c->id, c->name, c->pid, (now_ns - c->doorbell.episode_start_ns()) / 1'000'000,
                    c->doorbell.rings(), c->doorbell.mutes());
      RemoveClient(id, Unregister::kFlooding, now_ns);
      return;
  }
}

void ArbiterImpl::WatchDoorbell(const Client& c, bool watch) {
  if (auto s = poller_.Watch(c.chan.doorbell_fd(), kTagDoorbell | c.id, watch); !s.ok())
    spdlog::warn("client {}'s doorbell: {}", c.id, s.ToString());
}

void ArbiterImpl::UnmuteDoorbell(const DeadlineQueue::Entry& e, uint64_t now_ns) {
  Client* c = clients_.Find(e.client_id);
  // Stale: the client left, or its doorbell was unmuted and muted again later (that mute has
  // its own entry).
  if (c == nullptr || !c->doorbell.muted() || now_ns < c->doorbell.unmute_ns()) return;
  c->doorbell.Unmute();
  WatchDoorbell(*c, true);
}

void ArbiterImpl::OnSignal() {
  for (const int sig : poller_.TakeSignals()) BeginShutdown(sig == SIGINT ? "SIGINT" : "SIGTERM");
}

void ArbiterImpl::BeginShutdown(const char* why) {
  if (stopping_) return;
  stopping_ = true;
  const uint64_t now = NowNs();
  stop_deadline_ns_ = now + static_cast<uint64_t>(config_.slice.count()) +
                      static_cast<uint64_t>(config_.preempt_grace.count());
  spdlog::info("{}: shutting down: no new grants or registrations; holders finish their slice",
               why);
  // Holders are asked to yield at the end of their slice (CheckSlices does it while stopping).
  // No lease stands while stopping (a take that won is adopted and yields like a grant).
  std::vector<uint32_t> ids;
  for (const auto& [id, c] : clients_) ids.push_back(id);
  for (uint32_t id : ids)
    if (Client* c = clients_.Find(id)) RevokeLease(*c, now);
}

bool ArbiterImpl::ShutdownComplete(uint64_t now_ns) const {
  if (!stopping_) return false;
  if (now_ns >= stop_deadline_ns_) return true;
  for (const auto& g : gpus_)
    if (!g.holders.empty()) return false;
  return true;
}

void ArbiterImpl::SayGoodbyeToAll(const std::string& reason) {
  for (auto& [id, c] : clients_) {
    auto s = c->conn.SendGoodbye(reason, std::chrono::milliseconds(10));
    if (!s.ok()) spdlog::debug("goodbye to client {} failed: {}", id, s.ToString());
  }
}

shm::Status ArbiterImpl::Run() {
  std::vector<uint64_t> ready;
  for (;;) {
    uint64_t now = NowNs();
    PollAll(now);  // every channel read once; each client's deadlines brought up to date
    GrantDeferred(now);
    RunDue(now);   // the due deadlines: late orders, deep evictions, unmutes, wake-ups
    CheckSlices(now);
    EnforceDrains(now);
    ApplyPendingSlos(now);
    PumpTransfers(now);
    RestartMpsDaemons(now);
    MaybeCheckInvariants();
    if (ShutdownComplete(now)) break;
    // Metrics: at most 10 snapshots a second; a change in between is published by the timer.
    metrics_dirty_ = metrics_ != nullptr;
    if (metrics_ && now - metrics_published_ns_ >= kMetricsPeriodNs) {
      metrics_->Publish(MetricsText(now));
      metrics_published_ns_ = now;
      metrics_dirty_ = false;
    }
    // Arm every doorbell, then look once more so a report written before arming is not missed.
    // Read the clock again first: enforcement and deep eviction above may have blocked for
    // seconds (checkpoint), and channels are validated against it (timestamps <= now + 1 s).
    now = NowNs();
    for (auto& [id, c] : clients_) c->chan.ArmDoorbell();
    PollAll(now);
    GrantDeferred(now);  // a release seen just now frees a GPU a refused co-run grant waits for
    ArmTimer(now);
    if (auto s = poller_.Wait(ready); !s.ok()) return s;
    now = NowNs();
    for (auto& [id, c] : clients_) c->chan.DisarmDoorbell();
    for (const uint64_t tag : ready) Dispatch(tag, now);
  }
  FinishShutdown();
  return {};
}

void ArbiterImpl::Dispatch(uint64_t tag, uint64_t now) {
  const uint64_t kind = tag & 0xFFFFFFFF00000000ULL;
  const auto id = static_cast<uint32_t>(tag & 0xFFFFFFFFULL);
  switch (kind) {
    case kTagIntake:
      OnArrivals(now);
      break;
    case kTagDriver:
      OnDriverCompletions(now);
      break;
    case kTagClientExit:
      OnClientExit(id, now);
      break;
    case kTagMps:
      OnMpsExit(GpuIndex{id}, now);
      break;
    case kTagSignal:
      OnSignal();
      break;
    case kTagStop:
      BeginShutdown("stop requested");
      break;
    case kTagTimer:
      Deliver(now, policy::Timer{});
      break;
    case kTagConn:
      OnConnectionEvent(id, now);
      break;
    case kTagControl:
      control_->Serve([this](const nlohmann::json& req, ControlAccess access,
                             const ControlPeer& peer) { return HandleControl(req, access, peer); });
      break;
    case kTagDoorbell:
      OnDoorbell(id, now);
      break;
    case kTagOrphan:
      OnOrphanEvent(id, now);
      break;
    default:
      break;
  }
}

void ArbiterImpl::FinishShutdown() {
  SayGoodbyeToAll("arbiter shutting down");
  // Every client leaves; one whose driver operation is in flight leaves at its completion, and
  // a checkpointed one is thawed by the worker, which must be done before the arbiter exits
  // (nothing else would ever let that process run again).
  for (int round = 0; round < 8; ++round) {
    const uint64_t now = NowNs();
    if (worker_) OnDriverCompletions(now);
    std::vector<uint32_t> ids;
    for (const auto& [id, c] : clients_) ids.push_back(id);
    for (uint32_t id : ids) RemoveClient(id, Unregister::kClean, now);
    if (!worker_ || (clients_.empty() && worker_->InFlight() == 0)) break;
    if (!worker_->WaitIdle(kShutdownDriverWaitNs))
      spdlog::error("driver calls still running {} s into the shutdown",
                    kShutdownDriverWaitNs / 1'000'000'000);
  }
  if (worker_) OnDriverCompletions(NowNs());
  mps_.Stop();  // after every client left: no co-runner has work in flight any more
  for (Arrival& a : jobs_.TakeRegistrations()) reaper_.Dispose(std::move(a.conn));
  spdlog::info("arbiter stopped: {} registrations, {} grants, {} swap-ins, {} swap-outs",
               stats_.registrations, stats_.grants, stats_.swap_ins, stats_.swap_outs);
  for (const auto& [id, o] : orphans_)  // still alive and holding memory: the summary says so
    spdlog::warn("orphan {} of client {} '{}' (pid {}) still holds {} on GPU {}", o.id,
                 o.client_id, o.name, o.pid, FormatByteSize(o.bytes), gpus_[o.gpu].ordinal);
}

ArbiterStats ArbiterImpl::stats() const {
  ArbiterStats s = stats_;
  s.function_ids = clients_.function_ids();
  s.policy_entries = policy_ ? policy_->tracked_entries() : 0;
  s.tracked_uids = limits_.tracked_uids();
  s.gpus.clear();
  for (const GpuIndex i : gpus_.indices()) {
    const GpuState& g = gpus_[i];
    uint32_t orphans = 0;
    for (const auto& [id, o] : orphans_) orphans += o.gpu == i ? 1 : 0;
    s.gpus.push_back({g.ordinal.value(), book_.usable(i), book_.reserved(i), book_.peak_reserved(i),
                      book_.overshoot_events(i), book_.orphaned(i), orphans, book_.contexts(i)});
  }
  return s;
}

shm::Status WriteSummary(const std::string& path, const ArbiterStats& s) {
  nlohmann::json j;
  AddCountersJson(s, kShownInSummary, j);  // counters.h
  for (const auto& g : s.gpus) {
    j["gpus"].push_back({{"ordinal", g.ordinal},
                         {"usable_bytes", g.usable_bytes},
                         {"reserved_bytes", g.reserved_bytes},
                         {"peak_reserved_bytes", g.peak_reserved_bytes},
                         {"overshoot_events", g.overshoot_events},
                         {"orphaned_bytes", g.orphaned_bytes},
                         {"orphans", g.orphans},
                         {"mps_context_bytes", g.mps_context_bytes}});
  }
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) return shm::Status(shm::StatusCode::kOsError, "cannot write summary " + path);
  return {};
}

}  // namespace gshare::arbiter
