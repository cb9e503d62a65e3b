// RegistrationIntake's thread: accept, read each connection's request (or share query) by
// readiness, refuse what is malformed or over the limits, hand complete requests to the loop
// (registration_intake.h).
#include "registration_intake.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "control_server.h"  // PeerOf

namespace gshare::arbiter {
namespace {

constexpr uint64_t kTagListenerEv = 0;
constexpr uint64_t kTagStopEv = 1;
constexpr uint64_t kFirstConnTag = 2;
// Refusals are a single small packet on a connection that has nothing queued: never waited for.
constexpr auto kNoWait = std::chrono::nanoseconds(0);
constexpr uint64_t kLogEveryNs = 1'000'000'000;
constexpr uint64_t kListenerPauseNs = 100'000'000;

uint64_t MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

std::string Printable(std::string s) {
  s = s.substr(0, shm::kReasonSize - 1);
  for (char& ch : s)
    if (ch < 0x20 || ch > 0x7e) ch = '?';
  return s;
}

struct PendingConn {
  shm::RegistrationConnection conn;
  uint64_t deadline_ns = 0;
};

}  // namespace

struct RegistrationIntake::State {
  shm::RegistrationListener listener;
  IntakeLimits limits;
  FdReaper* reaper = nullptr;
  shm::UniqueFd epoll;
  shm::UniqueFd ready;    // eventfd: arrivals wait
  shm::UniqueFd stop;     // eventfd: the thread ends
  shm::UniqueFd reserve;  // released to accept one connection when out of descriptors
  std::thread thread;

  // Thread-only.
  std::map<uint64_t, PendingConn> pending;
  std::map<uid_t, uint32_t> pending_per_uid;
  uint64_t next_tag = kFirstConnTag;
  uint64_t last_fd_warning_ns = 0;
  uint64_t listener_paused_until_ns = 0;  // 0: watched

  mutable std::mutex mu;
  std::vector<Arrival> arrivals;  // guarded by mu
  IntakeStats stats;              // guarded by mu

  void Count(uint64_t IntakeStats::*field) {
    std::lock_guard<std::mutex> lock(mu);
    ++(stats.*field);
  }

  void Drop(shm::RegistrationConnection conn) { reaper->Dispose(std::move(conn)); }

  void Refuse(shm::RegistrationConnection conn, const std::string& why) {
    (void)conn.Refuse(Printable(why), limits.arbiter_epoch, kNoWait);
    Drop(std::move(conn));
  }

  void Forget(std::map<uint64_t, PendingConn>::iterator it) {
    (void)::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, it->second.conn.fd(), nullptr);
    const uid_t uid = it->second.conn.peer().uid;
    if (auto u = pending_per_uid.find(uid); u != pending_per_uid.end() && --u->second == 0)
      pending_per_uid.erase(u);
    pending.erase(it);
  }

  void AcceptAll(uint64_t now) {
    for (;;) {
      auto conn = listener.Accept(kNoWait);
      if (!conn.ok()) {
        if (conn.status().code() == shm::StatusCode::kTimeout) return;
        const int err = conn.status().sys_errno();
        if ((err == EMFILE || err == ENFILE) && reserve) {
          OutOfDescriptors(now);
          continue;
        }
        // Out of descriptors without a reserve (another thread took the slot), or another
        // error: the listener is not watched for a while, so it cannot wake the thread in a loop.
        PauseListener(now);
        if (now - last_fd_warning_ns >= kLogEveryNs) {
          last_fd_warning_ns = now;
          spdlog::warn("registration socket: accept: {}; not accepting for {} ms",
                       conn.status().ToString(), kListenerPauseNs / 1'000'000);
        }
        reserve.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        return;
      }
      Count(&IntakeStats::accepted);
      const uid_t uid = conn->peer().uid;
      if (pending.size() >= limits.max_pending) {
        Count(&IntakeStats::refused_pending);
        Refuse(std::move(*conn), "the arbiter has " + std::to_string(pending.size()) +
                                     " registrations waiting for their request; try again");
        continue;
      }
      if (pending_per_uid[uid] >= limits.max_pending_per_uid) {
        Count(&IntakeStats::refused_pending);
        Refuse(std::move(*conn), "uid " + std::to_string(uid) + " has " +
                                     std::to_string(limits.max_pending_per_uid) +
                                     " registrations waiting for their request already");
        continue;
      }
      const uint64_t tag = next_tag++;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = tag;
      if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, conn->fd(), &ev) != 0) {
        spdlog::warn("registration socket: epoll_ctl: {}", std::strerror(errno));
        Drop(std::move(*conn));
        continue;
      }
      ++pending_per_uid[uid];
      pending.emplace(tag, PendingConn{std::move(*conn), now + limits.request_timeout_ns});
      OnReadable(tag, now);  // the request is often there already
    }
  }

  // accept() failed for want of descriptors: one is released to take the connection and refuse
  // it with a reason, then taken back. Logged at most once a second.
  void OutOfDescriptors(uint64_t now) {
    reserve.Reset();
    auto conn = listener.Accept(kNoWait);
    if (conn.ok()) {
      Count(&IntakeStats::out_of_fds);
      Refuse(std::move(*conn), "the arbiter is out of file descriptors");
    }
    reserve.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (now - last_fd_warning_ns >= kLogEveryNs) {
      last_fd_warning_ns = now;
      spdlog::error("registration socket: out of file descriptors ({} registrations refused so "
                    "far); raise LimitNOFILE or lower max_clients",
                    stats_out_of_fds());
    }
  }

  uint64_t stats_out_of_fds() const {
    std::lock_guard<std::mutex> lock(mu);
    return stats.out_of_fds;
  }

  void OnReadable(uint64_t tag, uint64_t now) {
    auto it = pending.find(tag);
    if (it == pending.end()) return;
    std::vector<shm::UniqueFd> carried;
    auto req = it->second.conn.ReceiveOpening(kNoWait, &carried);
    for (auto& fd : carried) reaper->Dispose(std::move(fd));  // never closed on a thread that serves
    if (!req.ok() && req.status().code() == shm::StatusCode::kTimeout) return;  // not yet
    shm::RegistrationConnection conn = std::move(it->second.conn);
    Forget(it);
    const shm::PeerCredentials peer = conn.peer();
    if (!req.ok()) {
      if (req.status().code() == shm::StatusCode::kClosed) {
        Drop(std::move(conn));
        return;
      }
      Count(&IntakeStats::malformed);
      const std::string reason = "registration refused: " + req.status().ToString();
      spdlog::warn("pid {} uid {}: {}", peer.pid, peer.uid, reason);
      Refuse(std::move(conn), reason);
      return;
    }
    Arrival a;
    a.groups = PeerOf(conn.fd()).gids;
    a.conn = std::move(conn);
    if (req->query) {
      a.query = std::move(req->query);
    } else {
      a.request = std::move(*req->request);
    }
    a.arrived_ns = now;
    std::lock_guard<std::mutex> lock(mu);
    ++stats.requests;
    const bool was_empty = arrivals.empty();
    arrivals.push_back(std::move(a));
    if (was_empty) {
      const uint64_t one = 1;
      (void)!::write(ready.get(), &one, sizeof(one));
    }
  }

  void Expire(uint64_t now) {
    for (auto it = pending.begin(); it != pending.end();) {
      auto next = std::next(it);
      if (now >= it->second.deadline_ns) {
        Count(&IntakeStats::timeouts);
        const shm::PeerCredentials peer = it->second.conn.peer();
        spdlog::debug("pid {} uid {}: no registration request within {} ms; closed", peer.pid,
                      peer.uid, limits.request_timeout_ns / 1'000'000);
        shm::RegistrationConnection conn = std::move(it->second.conn);
        Forget(it);
        Drop(std::move(conn));
      }
      it = next;
    }
  }

  void WatchListener(bool watch) {
    epoll_event ev{};
    ev.events = watch ? EPOLLIN : 0U;
    ev.data.u64 = kTagListenerEv;
    (void)::epoll_ctl(epoll.get(), EPOLL_CTL_MOD, listener.fd(), &ev);
  }

  void PauseListener(uint64_t now) {
    if (listener_paused_until_ns != 0) return;
    listener_paused_until_ns = now + kListenerPauseNs;
    WatchListener(false);
  }

  int WaitMs(uint64_t now) const {
    uint64_t at = listener_paused_until_ns != 0 ? listener_paused_until_ns : UINT64_MAX;
    for (const auto& [tag, p] : pending) at = std::min(at, p.deadline_ns);
    if (at == UINT64_MAX) return -1;
    if (at <= now) return 0;
    return static_cast<int>(std::min<uint64_t>((at - now + 999'999) / 1'000'000, 60'000));
  }

  void Run() {
    constexpr int kMaxEvents = 64;
    epoll_event events[kMaxEvents];
    for (;;) {
      const int n = ::epoll_wait(epoll.get(), events, kMaxEvents, WaitMs(MonotonicNs()));
      if (n < 0 && errno != EINTR) {
        spdlog::error("registration intake: epoll_wait: {}", std::strerror(errno));
        return;
      }
      const uint64_t now = MonotonicNs();
      for (int i = 0; i < std::max(n, 0); ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kTagStopEv) return;
        if (tag == kTagListenerEv) {
          AcceptAll(now);
        } else {
          OnReadable(tag, now);
        }
      }
      Expire(now);
      if (listener_paused_until_ns != 0 && now >= listener_paused_until_ns) {
        listener_paused_until_ns = 0;
        WatchListener(true);
      }
    }
  }
};

shm::Result<std::unique_ptr<RegistrationIntake>> RegistrationIntake::Start(
    shm::RegistrationListener listener, IntakeLimits limits, FdReaper* reaper) {
  std::unique_ptr<RegistrationIntake> intake(new RegistrationIntake());
  auto st = std::make_unique<State>();
  st->listener = std::move(listener);
  st->limits = limits;
  st->reaper = reaper;
  st->epoll.Reset(::epoll_create1(EPOLL_CLOEXEC));
  st->ready.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  st->stop.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  st->reserve.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!st->epoll || !st->ready || !st->stop)
    return shm::Status::FromErrno("registration intake: epoll/eventfd", errno);
  for (auto [fd, tag] : {std::pair{st->listener.fd(), kTagListenerEv},
                         std::pair{st->stop.get(), kTagStopEv}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (::epoll_ctl(st->epoll.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
      return shm::Status::FromErrno("registration intake: epoll_ctl", errno);
  }
  try {
    st->thread = std::thread([s = st.get()] { s->Run(); });
  } catch (const std::system_error& e) {
    return shm::Status(shm::StatusCode::kUnavailable,
                       std::string("registration intake: cannot start its thread: ") + e.what());
  }
  intake->state_ = std::move(st);
  return intake;
}

RegistrationIntake::~RegistrationIntake() {
  if (!state_) return;
  const uint64_t one = 1;
  (void)!::write(state_->stop.get(), &one, sizeof(one));
  if (state_->thread.joinable()) state_->thread.join();
  for (auto& [tag, p] : state_->pending) state_->Drop(std::move(p.conn));
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto& a : state_->arrivals) state_->Drop(std::move(a.conn));
}

int RegistrationIntake::fd() const { return state_->ready.get(); }

std::vector<Arrival> RegistrationIntake::TakeArrivals() {
  std::vector<Arrival> out;
  std::lock_guard<std::mutex> lock(state_->mu);
  uint64_t v = 0;
  (void)!::read(state_->ready.get(), &v, sizeof(v));
  out.swap(state_->arrivals);
  return out;
}

IntakeStats RegistrationIntake::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

const std::string& RegistrationIntake::path() const { return state_->listener.path(); }

bool RegistrationIntake::refuses_descriptors() const {
  return state_->listener.refuses_descriptors();
}

}  // namespace gshare::arbiter
