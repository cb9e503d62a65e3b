// ArbiterClient: registration, token acquire/release, idle release, burst reports, swap
// orders, arbiter-loss handling and re-registration. See arbiter_client.h.
#include "arbiter_client.h"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "gshare/shm/futex.h"

namespace gshare::preload {
namespace {

uint64_t Now() { return shm::MonotonicNowNs(); }

template <typename... Args>
void LogAt(spdlog::logger* log, spdlog::level::level_enum lvl, spdlog::format_string_t<Args...> fmt,
           Args&&... args) {
  if (log != nullptr) log->log(lvl, fmt, std::forward<Args>(args)...);
}

// The late registration's attempts: the first few at info, then debug (one line per back-off
// step would fill a log while a node's arbiter is down for long).
spdlog::level::level_enum AttemptsLogLevel(uint64_t attempt) {
  return attempt <= 3 ? spdlog::level::info : spdlog::level::debug;
}

// Whether a failed registration means "no arbiter there (yet)": worth retrying later. A
// refusal, a version mismatch or a malformed reply would only repeat.
bool ArbiterAbsent(const shm::Status& s) {
  return s.code() == shm::StatusCode::kUnavailable || s.code() == shm::StatusCode::kTimeout ||
         s.code() == shm::StatusCode::kClosed;
}

constexpr auto kGrantPoll = std::chrono::milliseconds(20);
constexpr auto kIdleTick = std::chrono::milliseconds(1);
constexpr auto kAcquireTick = std::chrono::microseconds(200);
// How often an idle client checks that its swap-out staging is ready.
constexpr uint64_t kPrepareEveryNs = 50'000'000;

}  // namespace

ArbiterClient::ArbiterClient(const ArbiterClientOptions& options, ShimHost* host)
    : options_(options), host_(host) {}

shm::Result<std::unique_ptr<ArbiterClient>> ArbiterClient::Start(const ArbiterClientOptions& options,
                                                                 ShimHost* host,
                                                                 shm::Status* first_error) {
  std::unique_ptr<ArbiterClient> client(new ArbiterClient(options, host));
  // No token yet: submissions go through Acquire().
  host->CloseGate();
  if (auto s = client->Connect(Registration::kFirst); !s.ok()) {
    host->OpenGate();
    if (!ArbiterAbsent(s) || options.register_retry_max.count() <= 0) return s;
    // No arbiter yet: stand-alone (gate open, as without an arbiter) while the service thread
    // tries again with back-off.
    if (first_error != nullptr) *first_error = s;
    MutexLock lock(client->mu_);
    client->state_ = TokenState::kStandalone;
    client->late_pending_ = true;
    client->late_backoff_ = std::max(options.register_retry_initial, std::chrono::nanoseconds(1));
    client->late_next_ns_ = Now() + static_cast<uint64_t>(client->late_backoff_.count());
  }
  host->SetSwapProgressSink([c = client.get()](uint64_t bytes) { c->ReportSwapProgress(bytes); });
  try {
    client->thread_ = std::thread([c = client.get()] {
      c->ServiceLoop();
      MutexLock lock(c->mu_);
      c->thread_exited_ = true;
      c->cv_.NotifyAll();
    });
  } catch (const std::system_error& e) {  // never an exception into the application
    host->SetSwapProgressSink({});
    host->OpenGate();  // stand-alone, as without an arbiter
    return shm::Status(shm::StatusCode::kUnavailable,
                       std::string("cannot start the arbiter client's thread: ") + e.what());
  }
  return client;
}

ArbiterClient::~ArbiterClient() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  host_->SetSwapProgressSink({});
}

void ArbiterClient::ReportSwapProgress(uint64_t bytes) {
  shm::ClientChannel* ch = progress_channel_.load(std::memory_order_acquire);
  const uint32_t seq = progress_seq_.load(std::memory_order_acquire);
  if (ch != nullptr && seq != 0) ch->ReportSwapProgress(seq, bytes);
}

shm::Status ArbiterClient::Connect(Registration kind) {
  shm::RegisterRequest req;
  req.quota_bytes = options_.quota_bytes;
  req.slo_ms = options_.slo_ms;
  req.function_name = options_.function_name;
  req.pod_namespace = options_.pod_namespace;
  req.pod_name = options_.pod_name;
  req.mps_share = options_.mps_share;
  req.compute_demand_pct = options_.compute_demand_pct;
  req.bandwidth_demand_pct = options_.bandwidth_demand_pct;
  req.device_uuids = host_->DeviceUuids();
  const bool re_register = kind != Registration::kFirst;
  if (re_register) {
    // A late first registration describes what the process holds as a re-registration does
    // (it ran stand-alone: its memory may be on a GPU already), without a previous id.
    if (kind == Registration::kAgain) {
      req.flags |= shm::kFlagReRegister;
      req.previous_client_id = client_id();
    } else {
      req.flags |= shm::kFlagLate;
    }
    req.resident_bytes = std::min(host_->ResidentBytes(), options_.quota_bytes);
    // Resident: where its memory is. Swapped out: where its process (its contexts) still is,
    // so the arbiter moves the process if it swaps it in onto another GPU.
    if (host_->Resident()) req.flags |= shm::kFlagResident;
    // Its devices named: the device index, which the arbiter resolves by UUID (a late first
    // registration has no map from the arbiter yet); a device past the named ones names no GPU.
    if (req.device_uuids.empty()) {
      req.current_gpu = host_->CurrentGpu();
    } else {
      const uint32_t device = host_->CurrentDevice();
      req.current_gpu = device < req.device_uuids.size() ? device : shm::kNoGpu;
    }
  }
  auto reg = shm::Register(options_.socket_path, req, options_.register_timeout);
  if (!reg.ok()) return reg.status();
  const int channel_fd = reg->channel.get();  // kept by the ClientChannel (Attach takes it)
  const int doorbell_fd = reg->doorbell.get();
  auto chan = shm::ClientChannel::Attach(std::move(reg->channel), std::move(reg->doorbell));
  if (!chan.ok()) return chan.status();
  auto ch = std::make_shared<shm::ClientChannel>(std::move(*chan));
  // Which GPU each of its devices is, before any ordinal of the arbiter's is translated.
  if (!reg->reply.device_gpus.empty()) host_->SetDeviceGpus(reg->reply.device_gpus);
  if (!re_register && host_->Resident() && host_->ResidentBytes() == 0 &&
      host_->CurrentGpu() != reg->reply.gpu) {
    // Nothing allocated yet: put the (empty) vGPU on the GPU the arbiter assigned, so its
    // memory lands where the arbiter reserved it and the application's device is that GPU
    // (moving nothing costs nothing).
    host_->MoveEmptyTo(reg->reply.gpu);
  }
  const bool resident = host_->Resident();
  (void)ch->SetResidency(resident ? shm::Residency::kResident : shm::Residency::kSwappedOut,
                         resident ? host_->CurrentGpu() : shm::kNoGpu, host_->ResidentBytes());
  // For a forked child (DropInheritedAfterFork), before the previous registration's fds are
  // closed below (or when the last user of its channel lets go).
  fork_connection_fd_.store(reg->connection.get(), std::memory_order_release);
  fork_channel_fd_.store(channel_fd, std::memory_order_release);
  fork_doorbell_fd_.store(doorbell_fd, std::memory_order_release);
  fork_channel_map_.store(ch->layout(), std::memory_order_release);
  {
    MutexLock lock(mu_);
    connection_ = std::move(reg->connection);
    channel_ = ch;
    client_id_ = reg->reply.client_id;
    connected_ = true;
    wants_again_ = false;  // a new channel: nothing asked there yet
    ++registrations_;
    last_order_seq_ = 0;
  }
  LogAt(options_.log, spdlog::level::info, "registered with the arbiter as client {} on GPU {}{}",
        reg->reply.client_id, reg->reply.gpu,
        kind == Registration::kAgain  ? " (re-registration)"
        : kind == Registration::kLate ? " (late first registration)"
                                      : "");
  // An order may already wait in the new channel (a client that does not fit starts swapped
  // out): obey it before the application can allocate.
  const shm::SwapOrder order = ch->ReadSwapOrder();
  if (order.seq != 0) HandleSwapOrder(order);
  return {};
}

bool ArbiterClient::Acquire() {
  MutexLock lock(mu_);
  for (;;) {
    if (state_ == TokenState::kStandalone || stop_) return false;
    if (state_ == TokenState::kHeld) {
      // Holding: the gate opens only while resident (ShimHost::OpenGate checks it under the
      // swap lock). Not resident: ask for the swap-in first.
      if (host_->Resident()) {
        host_->GrantedOn(grant_.gpu);
        host_->OpenGate();
        return true;
      }
      if (connected_) (void)channel_->RequestSwapIn();
      if (!WaitResident()) cv_.WaitFor(mu_, kGrantPoll);
      continue;
    }
    if (state_ != TokenState::kNone) {
      cv_.Wait(mu_);
      continue;
    }
    if (!connected_) {  // fail-closed: wait for the arbiter to come back
      cv_.WaitFor(mu_, kGrantPoll);
      continue;
    }
    state_ = TokenState::kAcquiring;
    const std::shared_ptr<shm::ClientChannel> ch = channel_;
    // The lease: a resident sole tenant may find its next grant waiting in the channel. Taking
    // it is one CAS; nothing here may make a system call (no doorbell, no notify: the service
    // thread sees kHeld at its next tick and tells the arbiter then).
    const bool try_lease = options_.use_lease && host_->Resident();
    if (!in_burst_) {
      in_burst_ = true;
      burst_gpu_ns_ = 0;
      (void)ch->ReportBurstStart(Now(), /*notify=*/!try_lease);  // else RequestToken rings
    }
    if (try_lease) {
      if (const std::optional<shm::GrantInfo> lease = ch->TryTakeLease()) {
        grant_ = *lease;
        state_ = TokenState::kHeld;
        held_since_ns_ = Now();
        last_activity_ns_ = held_since_ns_;
        announce_take_ = true;
        wants_again_ = false;
        ++lease_takes_;
        continue;  // the kHeld branch opens the gate
      }
    }
    cv_.NotifyAll();  // the service thread switches to watching for swap orders
    // Residency first: ask the arbiter (it may have to make room), never swap in on our own.
    bool ok = true;
    if (!host_->Resident()) {
      (void)ch->RequestSwapIn();
      ok = WaitResident();
    }
    std::optional<shm::GrantInfo> grant;
    if (ok) {
      lock.Unlock();
      (void)ch->RequestToken();
      for (;;) {
        auto r = ch->WaitForGrant(kGrantPoll);
        if (r.ok()) {
          grant = *r;
          break;
        }
        MutexLock g(mu_);
        if (!connected_ || channel_ != ch || stop_) break;
      }
      lock.Lock();
    }
    if (grant && connected_ && channel_ == ch && state_ == TokenState::kAcquiring) {
      ++waited_grants_;
      wants_again_ = false;
      grant_ = *grant;
      state_ = TokenState::kHeld;
      held_since_ns_ = Now();
      last_activity_ns_ = held_since_ns_;
      cv_.NotifyAll();
      continue;  // the kHeld branch opens the gate (if resident)
    }
    // The arbiter went away meanwhile (OnArbiterLost may already have switched us).
    if (state_ == TokenState::kAcquiring) state_ = TokenState::kNone;
    cv_.NotifyAll();
  }
}

bool ArbiterClient::WaitResident() {
  const std::shared_ptr<shm::ClientChannel> ch = channel_;
  while (!host_->Resident()) {
    if (!connected_ || channel_ != ch || stop_) return false;
    cv_.WaitFor(mu_, kGrantPoll);
  }
  return true;
}

void ArbiterClient::Release(bool want_again, bool only_if_still_idle) {
  std::shared_ptr<shm::ClientChannel> ch;
  uint32_t seq = 0;
  {
    MutexLock lock(mu_);
    if (state_ != TokenState::kHeld) return;
    state_ = TokenState::kReleasing;
    ch = channel_;
    seq = grant_.seq;
  }
  const uint64_t decided = Now();
  host_->CloseGate();
  if (only_if_still_idle && host_->TakeActivity()) {
    // Work was submitted between the idle decision and the gate's closing (this thread was
    // descheduled in between): the process is busy after all. Keep the token.
    host_->OpenGate();
    MutexLock lock(mu_);
    if (state_ == TokenState::kReleasing) {
      state_ = TokenState::kHeld;
      last_activity_ns_ = Now();
    }
    cv_.NotifyAll();
    return;
  }
  (void)ch->BeginDraining();
  if (!host_->Drain())
    LogAt(options_.log, spdlog::level::warn, "draining in-flight work failed; releasing anyway");
  MutexLock lock(mu_);
  const uint64_t now = Now();
  burst_gpu_ns_ += now - held_since_ns_;
  if (!want_again) {
    (void)ch->ReportBurstEnd(now, burst_gpu_ns_);
    in_burst_ = false;
  }
  (void)ch->Release(seq, want_again);
  wants_again_ = want_again;
  LogAt(options_.log, spdlog::level::debug,
        "released grant {} after holding it {} us (release began after {} us){}", seq,
        (now - held_since_ns_) / 1000, (decided - std::min(decided, held_since_ns_)) / 1000,
        want_again ? " (preempted, wants it again)" : "");
  state_ = TokenState::kNone;
  cv_.NotifyAll();
}

void ArbiterClient::HandleSwapOrder(const shm::SwapOrder& order) {
  std::shared_ptr<shm::ClientChannel> ch;
  {
    MutexLock lock(mu_);
    last_order_seq_ = order.seq;
    ch = channel_;
  }
  SwapOutcome r;
  if (order.op != shm::SwapOp::kSwapOut && order.op != shm::SwapOp::kSwapIn) return;
  progress_channel_.store(ch.get(), std::memory_order_release);
  progress_seq_.store(order.seq, std::memory_order_release);
  if (order.op == shm::SwapOp::kSwapOut) {
    Release(false);  // the arbiter never orders a holder out; be safe if it does
    (void)ch->SetResidency(shm::Residency::kSwappingOut, host_->CurrentGpu(), host_->ResidentBytes());
    r = host_->SwapOut();
  } else {
    (void)ch->SetResidency(shm::Residency::kSwappingIn, shm::kNoGpu, 0);
    r = host_->SwapIn(order.target_gpu);
  }
  progress_seq_.store(0, std::memory_order_release);
  progress_channel_.store(nullptr, std::memory_order_release);
  const bool resident = host_->Resident();
  (void)ch->AckSwap(order.seq, r.ok ? shm::SwapAckStatus::kOk : shm::SwapAckStatus::kFailed,
                    r.bytes, r.duration_ns,
                    resident ? shm::Residency::kResident : shm::Residency::kSwappedOut,
                    resident ? host_->CurrentGpu() : shm::kNoGpu, host_->ResidentBytes());
  LogAt(options_.log, spdlog::level::debug, "swap-{} order {}: {} ({} bytes in {} us)",
        order.op == shm::SwapOp::kSwapOut ? "out" : "in", order.seq, r.ok ? "done" : "FAILED",
        r.bytes, r.duration_ns / 1000);
  cv_.NotifyAll();
}

void ArbiterClient::LeaveStandalone() {
  MutexLock lock(mu_);
  if (state_ == TokenState::kStandalone) {
    lock.Unlock();
    host_->CloseGate();  // from now on submissions need the token (again)
    lock.Lock();
  }
  state_ = TokenState::kNone;
  in_burst_ = false;
  cv_.NotifyAll();
}

bool ArbiterClient::TryLateRegistration(uint64_t now) {
  if (now < late_next_ns_) return false;
  ++late_attempts_;
  const shm::Status s = Connect(Registration::kLate);
  if (s.ok()) {
    MutexLock lock(mu_);
    late_pending_ = false;
    return true;
  }
  if (!ArbiterAbsent(s)) {
    // An arbiter answered, and not with "come back later": a refusal (its reason), another
    // protocol version. Asking again would get the same answer: stand-alone for good, as when
    // the first registration is refused.
    LogAt(options_.log, spdlog::level::warn,
          "late registration with the arbiter at {} failed ({}): running stand-alone (quota only, "
          "no time slicing) for good",
          options_.socket_path, s.ToString());
    MutexLock lock(mu_);
    late_pending_ = false;
    return false;
  }
  LogAt(options_.log, AttemptsLogLevel(late_attempts_),
        "arbiter at {} still not reachable (attempt {}: {}); next try in {} ms",
        options_.socket_path, late_attempts_, s.ToString(),
        std::chrono::duration_cast<std::chrono::milliseconds>(late_backoff_).count());
  late_next_ns_ = Now() + static_cast<uint64_t>(late_backoff_.count());
  late_backoff_ = std::min(late_backoff_ * 2, options_.register_retry_max);
  return false;
}

void ArbiterClient::OnArbiterLost(const std::string& why) {
  MutexLock lock(mu_);
  if (!connected_) return;
  connected_ = false;
  wants_again_ = false;
  LogAt(options_.log, spdlog::level::warn, "arbiter lost ({}); running {}", why,
        options_.fail_closed ? "fail-closed (submissions wait)" : "fail-open under the last assignment");
  if (options_.fail_closed) {
    if (state_ == TokenState::kHeld) {
      lock.Unlock();
      host_->CloseGate();
      lock.Lock();
      state_ = TokenState::kNone;
    }
    cv_.NotifyAll();
    return;
  }
  // Fail-open: wait for a release in progress, then run stand-alone.
  while (state_ == TokenState::kReleasing) cv_.Wait(mu_);
  state_ = TokenState::kStandalone;
  in_burst_ = false;
  lock.Unlock();
  if (!host_->Resident()) {
    const SwapOutcome r = host_->SwapIn(host_->CurrentGpu());
    if (!r.ok) LogAt(options_.log, spdlog::level::err, "stand-alone swap-in failed");
  }
  host_->OpenGate();
  cv_.NotifyAll();
}

void ArbiterClient::ServiceLoop() {
  uint64_t last_reconnect = 0;
  for (;;) {
    std::shared_ptr<shm::ClientChannel> ch;
    int conn_fd = -1;
    bool connected = false;
    TokenState state = TokenState::kNone;
    bool announce = false;
    {
      MutexLock lock(mu_);
      if (stop_) return;
      ch = channel_;
      conn_fd = connection_.get();
      connected = connected_;
      state = state_;
      announce = std::exchange(announce_take_, false);
    }
    // A lease taken by Acquire: ring the doorbell now (if the arbiter sleeps), off the
    // submitting thread's path, so the arbiter accounts the grant promptly.
    if (announce && connected) (void)ch->NotifyArbiter();
    const uint64_t now = Now();
    bool late = false;
    {
      MutexLock lock(mu_);
      late = late_pending_;
    }
    if (late) {
      // Never registered: stand-alone until a late first registration is accepted. Nothing to
      // watch meanwhile (no channel, no connection).
      if (TryLateRegistration(now)) {
        LeaveStandalone();
        continue;
      }
      MutexLock lock(mu_);
      if (!late_pending_) continue;  // gave up: the loop idles below, stand-alone for good
      const uint64_t t = Now();
      const uint64_t wait_ns = late_next_ns_ > t ? late_next_ns_ - t : 0;
      cv_.WaitFor(mu_, std::chrono::nanoseconds(std::min<uint64_t>(wait_ns, 100'000'000)),
                  [this]() REQUIRES(mu_) { return stop_; });
      continue;
    }
    if (!connected && registrations() == 0) {
      // A late first registration that gave up: stand-alone for good; wait for the exit.
      MutexLock lock(mu_);
      cv_.Wait(mu_, [this]() REQUIRES(mu_) { return stop_; });
      continue;
    }
    if (!connected) {
      if (now - last_reconnect >= static_cast<uint64_t>(options_.reconnect_interval.count())) {
        last_reconnect = now;
        if (Connect(Registration::kAgain).ok()) {
          LeaveStandalone();
          continue;
        }
      }
      MutexLock lock(mu_);
      cv_.WaitFor(mu_, std::min<std::chrono::nanoseconds>(options_.reconnect_interval, kGrantPoll));
      continue;
    }
    // Wait for the next thing to do. Holding: short ticks (idleness and preemption must be
    // seen promptly) that a swap order cuts short. Acquiring: the futex on the swap-order word
    // (a requested swap-in must start at once). Otherwise: the state condition variable (an
    // Acquire wakes us at once) with a bounded poll of the order word.
    uint32_t last_seq = 0;
    {
      MutexLock lock(mu_);
      last_seq = last_order_seq_;
    }
    if (state == TokenState::kHeld || state == TokenState::kAcquiring) {
      const auto base = std::clamp<std::chrono::nanoseconds>(
          options_.idle_release / 4, std::chrono::microseconds(20), std::chrono::milliseconds(1));
      const auto tick = state == TokenState::kHeld ? std::max(base, held_tick_)
                                                   : std::chrono::nanoseconds(kAcquireTick);
      auto order = ch->WaitForSwapOrder(last_seq, tick);
      if (order.ok() && order->seq != last_seq) HandleSwapOrder(*order);
    } else {
      {
        MutexLock lock(mu_);
        cv_.WaitFor(mu_, kIdleTick, [&]() REQUIRES(mu_) { return stop_ || state_ != state; });
      }
      const shm::SwapOrder order = ch->ReadSwapOrder();
      if (order.seq != last_seq && order.seq != 0) {
        HandleSwapOrder(order);
      } else if (options_.prepare_swap_out && state == TokenState::kNone &&
                 Now() - last_prepare_ns_ >= kPrepareEveryNs) {
        // Idle and not holding: the likeliest moment for a swap-out order to come next. Pin its
        // staging now (a no-op when already big enough), not when the order is waiting.
        last_prepare_ns_ = Now();
        host_->PrepareSwapOut();
      }
    }

    // Liveness: the connection carries nothing but a Goodbye or EOF.
    auto bye = shm::ReceiveGoodbye(conn_fd, std::chrono::nanoseconds(0));
    if (bye.ok()) {
      OnArbiterLost("goodbye: " + bye->reason);
      continue;
    }
    if (bye.status().code() != shm::StatusCode::kTimeout) {
      OnArbiterLost(bye.status().ToString());
      continue;
    }

    const uint64_t t = Now();
    ch->Heartbeat(t);
    bool release = false;
    bool want_again = false;
    bool preempted = false;
    {
      MutexLock lock(mu_);
      if (state_ == TokenState::kNone && ch->HoldsToken() && wants_again_) {
        // The answer to the release that asked again (preempted mid-burst), come while no
        // submission waits in Acquire: held, as if Acquire had waited for it. The next
        // submission runs at once; the idle release gives it back if none comes. (Given back
        // as a stray, it ended the burst the arbiter was still serving, and the next
        // submission asked for, and waited for, a grant again.)
        wants_again_ = false;
        grant_ = ch->ReadGrant();
        state_ = TokenState::kHeld;
        held_since_ns_ = Now();
        last_activity_ns_ = held_since_ns_;
        ++waited_grants_;
        cv_.NotifyAll();
        continue;
      }
      if (state_ == TokenState::kNone && ch->HoldsToken()) {
        // A grant nobody here waits for (the request that asked for it was answered otherwise,
        // e.g. the arbiter re-granted after enforcement): give it back at once, or the GPU
        // stays held until the arbiter enforces (checkpoints) us. Under mu_, so an Acquire
        // starting now asks again and waits for a fresh grant.
        const shm::GrantInfo stray = ch->ReadGrant();
        if (in_burst_) {
          (void)ch->ReportBurstEnd(t, 0);
          in_burst_ = false;
        }
        (void)ch->Release(stray.seq, false);
        ++stray_releases_;
        LogAt(options_.log, spdlog::level::debug, "released grant {} nobody was waiting for",
              stray.seq);
        continue;
      }
      if (state_ != TokenState::kHeld) continue;
      // The arbiter may have revoked our grant and granted again (enforcement: checkpoint,
      // restore, re-grant) without our releasing: follow the newest grant, or preemptions and
      // releases would name a sequence the arbiter no longer waits for.
      if (ch->HoldsToken()) {
        const shm::GrantInfo current = ch->ReadGrant();
        if (current.seq != grant_.seq) grant_ = current;
      }
      if (host_->TakeActivity()) {
        last_activity_ns_ = t;
        // Only work in flight, nothing submitted: the process waits for the GPU. Tick less
        // often (doubling up to 1 ms): a release would have to drain that work first anyway,
        // and every tick costs a wake-up and a stream query (CPU the GPU work may need).
        held_tick_ = host_->LastActivityWasInFlightOnly()
                         ? std::min<std::chrono::nanoseconds>(
                               std::max<std::chrono::nanoseconds>(held_tick_ * 2,
                                                                  std::chrono::microseconds(40)),
                               std::chrono::milliseconds(1))
                         : std::chrono::nanoseconds(0);
      } else {
        held_tick_ = std::chrono::nanoseconds(0);
      }
      const bool idle = t - last_activity_ns_ >= static_cast<uint64_t>(options_.idle_release.count());
      const uint32_t preempt = ch->PreemptSeq();
      if (preempt != 0 && preempt == grant_.seq) {
        // A graph capture in progress keeps the token until it ends (checked again next tick).
        if (host_->Capturing()) continue;
        release = true;
        preempted = true;
        want_again = !idle;
      } else if (idle) {
        release = true;
      }
    }
    if (release) Release(want_again, /*only_if_still_idle=*/!preempted);
  }
}

void ArbiterClient::SayGoodbye(const std::string& reason, std::chrono::milliseconds wait) {
  {
    MutexLock lock(mu_);
    if (said_goodbye_) return;
    said_goodbye_ = true;
  }
  Release(false);  // no-op unless holding; drains the process's work first
  int fd = -1;
  {
    MutexLock lock(mu_);
    stop_ = true;
    cv_.NotifyAll();
    // The service thread notices stop_ within a tick (or after a swap it is running).
    (void)cv_.WaitFor(mu_, wait, [this]() REQUIRES(mu_) { return thread_exited_; });
    if (connected_) fd = connection_.get();
    connected_ = false;
    state_ = TokenState::kStandalone;
    in_burst_ = false;
  }
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) {
    bool exited = false;
    {
      MutexLock lock(mu_);
      exited = thread_exited_;
    }
    // Still busy after the wait (a swap in progress): detached, so a thread that ends during the
    // exit is not left unjoined (the client is never destroyed, so it may go on using it).
    if (exited) {
      thread_.join();
    } else {
      thread_.detach();
    }
  }
  if (fd >= 0) {
    const shm::Status s = shm::SendClientGoodbye(fd, reason, std::chrono::milliseconds(50));
    LogAt(options_.log, spdlog::level::info, "said goodbye to the arbiter ({}){}", reason,
          s.ok() ? "" : ": " + s.ToString());
  }
  // Stand-alone from now on: submissions made while the process exits are admitted (a swapped
  // out vGPU is swapped back in by the gate's automatic path).
  host_->OpenGate();
  cv_.NotifyAll();
}

void ArbiterClient::DropInheritedAfterFork() {
  for (std::atomic<int>* fd : {&fork_connection_fd_, &fork_channel_fd_, &fork_doorbell_fd_}) {
    const int value = fd->exchange(-1, std::memory_order_acq_rel);
    if (value >= 0) (void)::close(value);
  }
  if (void* map = fork_channel_map_.exchange(nullptr, std::memory_order_acq_rel); map != nullptr) {
    (void)::munmap(map, shm::kChannelSegmentSize);
  }
}

bool ArbiterClient::connected() const {
  MutexLock lock(mu_);
  return connected_;
}
uint32_t ArbiterClient::client_id() const {
  MutexLock lock(mu_);
  return client_id_;
}
uint64_t ArbiterClient::registrations() const {
  MutexLock lock(mu_);
  return registrations_;
}
bool ArbiterClient::registered_once() const {
  MutexLock lock(mu_);
  return registrations_ != 0;
}
bool ArbiterClient::holding() const {
  MutexLock lock(mu_);
  return state_ == TokenState::kHeld;
}
uint64_t ArbiterClient::lease_takes() const {
  MutexLock lock(mu_);
  return lease_takes_;
}
uint64_t ArbiterClient::waited_grants() const {
  MutexLock lock(mu_);
  return waited_grants_;
}
uint64_t ArbiterClient::stray_releases() const {
  MutexLock lock(mu_);
  return stray_releases_;
}

}  // namespace gshare::preload
