// Orphan reservations (invariant 6 in arbiter_impl.h; docs/arbiter.md, "Orphans"): when the
// arbiter disconnects a process that is still alive (malformed channel, a swap order not
// acknowledged in time, failed enforcement, a doorbell flood), that process still holds its
// device memory — its shim runs on fail-open and registers again resident. The reservation is
// therefore kept, bound to the process by its pidfd (SO_PEERPIDFD; a pid alone could be reused),
// and released only when
//   - the process exits (its pidfd, watched in the epoll set, becomes readable),
//   - the same process registers again (same pid, pidfd not signalled): the registration's own
//     reservation replaces it, or
//   - the driver knows no CUDA state of the process (cuCheckpointProcessGetState fails: it is no
//     CUDA process, so it holds no device memory), asked by the driver worker right after the
//     orphan is made (not for a stopped process, which could not answer a driver that asks the
//     process itself).
// Without a pidfd (kernel < 6.5) the reservation is released at once, as before.
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "arbiter_impl.h"
#include "gshare/common/units.h"

namespace gshare::arbiter {
namespace {

// Whether the process behind `pidfd` has exited (a pidfd polls readable from its exit on).
bool Exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// Whether `pid` is stopped (SIGSTOP, a debugger: state T or t in /proc/<pid>/stat). Such a
// process cannot answer anything, and a driver whose state query needs the process's own
// cooperation (simcuda's checkpoint service thread) would block the loop on it. Read right after
// its pidfd said it lives, so the pid is still its own.
bool Stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  return stat[paren + 2] == 'T' || stat[paren + 2] == 't';
}

const char* ReleaseName(OrphanRelease why) {
  switch (why) {
    case OrphanRelease::kExited:
      return "the process exited";
    case OrphanRelease::kReRegistered:
      return "the process registered again (its new reservation replaces it)";
    case OrphanRelease::kNoDevice:
      return "the driver knows no CUDA state of the process";
  }
  return "?";
}

}  // namespace

bool ArbiterImpl::MaybeOrphan(Client& c, Unregister reason, uint64_t now_ns) {
  if (stopping_ || !DisconnectedAlive(reason)) return false;  // leaving, died, or shutdown
  // Swapped out or checkpointed, it holds no device memory, unless an MPS context (which a
  // swap-out leaves where it is).
  const uint64_t context = book_.ContextBytes(c.id);
  if (!ReservedOn(c) && context == 0) return false;
  const GpuIndex g = ReservedOn(c).value_or(c.session.gpu());
  const uint64_t held = (ReservedOn(c) ? c.quota : 0) + context;
  const DeviceOrdinal ordinal = gpus_[g].ordinal;
  if (c.conn.pidfd() < 0) {
    spdlog::warn(
        "client {} '{}' (pid {}) disconnected alive; without a pidfd (kernel < 6.5) "
        "its reservation of {} on GPU {} is released now although it may still hold "
        "that memory",
        c.id, c.name, c.pid, FormatByteSize(held), ordinal);
    return false;
  }
  if (Exited(c.conn.pidfd())) return false;  // it died meanwhile: its memory went with it
  const uint32_t orphan = MakeOrphan(c.id, c.pid, c.uid, c.name, g, held, reason, c.conn.pidfd(),
                                     /*reserved=*/true, now_ns);
  // An MPS client's process stays the MPS server's client while it lives (the share query's
  // one uid per server counts it). A thawed process is never one: MPS clients are not
  // checkpointed.
  if (orphan != 0) orphans_.at(orphan).mps_share = c.mps_share;
  return orphan != 0;
}

uint32_t ArbiterImpl::MakeOrphan(uint32_t client_id, pid_t pid, uid_t uid, const std::string& name,
                                 GpuIndex g, uint64_t bytes, Unregister reason, int pidfd,
                                 bool reserved, uint64_t now_ns) {
  ++stats_.orphans_created;
  Orphan o;
  o.id = next_orphan_id_++;
  o.client_id = client_id;
  o.pid = pid;
  o.uid = uid;
  o.name = name;
  o.gpu = g;
  o.bytes = bytes;
  o.reason = reason;
  o.since_ns = now_ns;
  o.pidfd.Reset(::fcntl(pidfd, F_DUPFD_CLOEXEC, 0));
  if (!o.pidfd || !poller_.Add(o.pidfd.get(), kTagOrphan | o.id).ok()) {
    spdlog::error("client {} '{}': cannot watch its pidfd ({}); its reservation is released now",
                  client_id, name, std::strerror(errno));
    return 0;
  }
  // The bytes move from the client's reservation to the orphan: reserved is unchanged, unless
  // a thawed process holds memory again that nothing reserved.
  const GpuState& gpu = gpus_[g];
  if (reserved) {
    (void)book_.HandToOrphan(client_id, o.id);
  } else {
    book_.AddOrphan(o.id, g, o.bytes);
  }
  const bool stopped = Stopped(pid);
  spdlog::warn("client {} '{}' (pid {}) was disconnected ({}) but is alive{} and holds its "
               "device memory: its {} on GPU {} stay reserved as orphan {} until it exits or "
               "registers again",
               client_id, name, pid, UnregisterName(reason), stopped ? " (stopped)" : "",
               FormatByteSize(o.bytes), gpu.ordinal, o.id);
  RecordFor(shm::EventType::kReservation, client_id, gpu.ordinal, book_.reserved(g), o.bytes);
  const uint32_t id = o.id;
  const int watched = o.pidfd.get();
  orphans_.emplace(id, std::move(o));
  // Released on the driver's word that the process has no CUDA state (asked off the loop); a
  // stopped process is not asked (it could not answer), and a driver that cannot tell in time
  // (a wedged process) keeps the orphan.
  if (!stopped && driver_ && driver_->can_query_state() && worker_)
    StartOrphanQuery(id, pid, watched);
  return id;
}

bool ArbiterImpl::OnRegistrationFrom(pid_t pid, uint64_t now_ns) {
  std::vector<std::pair<uint32_t, OrphanRelease>> done;
  for (const auto& [id, o] : orphans_) {
    if (o.pid != pid) continue;
    // The same pid with a pidfd that has not signalled is the same process (a pid is reused
    // only after its process exited); a signalled one is a new process that got the pid.
    done.emplace_back(id, Exited(o.pidfd.get()) ? OrphanRelease::kExited
                                                : OrphanRelease::kReRegistered);
  }
  bool own = false;
  for (const auto& [id, why] : done) {
    own |= why == OrphanRelease::kReRegistered;
    ReleaseOrphan(id, why, now_ns, /*pump=*/false);
  }
  return own;
}

void ArbiterImpl::OnOrphanEvent(uint32_t orphan_id, uint64_t now_ns) {
  const auto it = orphans_.find(orphan_id);
  if (it == orphans_.end() || !Exited(it->second.pidfd.get())) return;
  ReleaseOrphan(orphan_id, OrphanRelease::kExited, now_ns, /*pump=*/true);
}

void ArbiterImpl::ReleaseOrphan(uint32_t orphan_id, OrphanRelease why, uint64_t now_ns, bool pump) {
  const auto it = orphans_.find(orphan_id);
  if (it == orphans_.end()) return;
  Orphan& o = it->second;
  poller_.Remove(o.pidfd.get());
  const GpuState& gpu = gpus_[o.gpu];
  (void)book_.ReleaseOrphan(o.id);
  switch (why) {
    case OrphanRelease::kExited:
      ++stats_.orphans_released_exited;
      break;
    case OrphanRelease::kReRegistered:
      ++stats_.orphans_released_reregistered;
      break;
    case OrphanRelease::kNoDevice:
      ++stats_.orphans_released_no_device;
      break;
  }
  spdlog::info("orphan {} of client {} '{}' (pid {}): {} on GPU {} released after {} ms: {}",
               o.id, o.client_id, o.name, o.pid, FormatByteSize(o.bytes), gpu.ordinal,
               (now_ns - std::min(now_ns, o.since_ns)) / 1'000'000, ReleaseName(why));
  RecordFor(shm::EventType::kReservation, o.client_id, gpu.ordinal, book_.reserved(o.gpu), 0);
  orphans_.erase(it);
  if (pump) PumpTransfers(now_ns);  // a swap-in waiting for room may fit now
}

}  // namespace gshare::arbiter
