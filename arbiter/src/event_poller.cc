// The arbiter loop's epoll set, timer, wake-up and signal descriptors (see event_poller.h).
#include "event_poller.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace gshare::arbiter {

Status EventPoller::Open(const Tags& tags, bool handle_signals) {
  tags_ = tags;
  epoll_.Reset(::epoll_create1(EPOLL_CLOEXEC));
  timer_.Reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  wake_.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_ || !timer_ || !wake_) return Status::FromErrno("epoll/timerfd/eventfd", errno);
  if (handle_signals) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    if (const int err = ::pthread_sigmask(SIG_BLOCK, &mask, nullptr); err != 0)
      return Status::FromErrno("pthread_sigmask", err);
    signal_.Reset(::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!signal_) return Status::FromErrno("signalfd", errno);
    if (auto s = Add(signal_.get(), tags_.signal); !s.ok()) return s;
  }
  if (auto s = Add(timer_.get(), tags_.timer); !s.ok()) return s;
  return Add(wake_.get(), tags_.wake);
}

Status EventPoller::Add(int fd, uint64_t tag, bool hangup) {
  epoll_event ev{};
  ev.events = EPOLLIN | (hangup ? EPOLLRDHUP : 0U);
  ev.data.u64 = tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
    return Status::FromErrno("epoll_ctl(ADD)", errno);
  return {};
}

void EventPoller::Remove(int fd) { (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr); }

Status EventPoller::Watch(int fd, uint64_t tag, bool readable) {
  epoll_event ev{};
  ev.events = readable ? EPOLLIN : 0U;  // no events: the descriptor stays registered, unreported
  ev.data.u64 = tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) != 0)
    return Status::FromErrno("epoll_ctl(MOD)", errno);
  return {};
}

void EventPoller::ArmAt(uint64_t at_ns) {
  itimerspec spec{};  // all zero: disarmed
  if (at_ns != UINT64_MAX) {
    // An absolute time of zero would disarm it: a time already past fires at the next tick.
    at_ns = std::max<uint64_t>(at_ns, 1);
    spec.it_value.tv_sec = static_cast<time_t>(at_ns / 1'000'000'000ULL);
    spec.it_value.tv_nsec = static_cast<long>(at_ns % 1'000'000'000ULL);
  }
  (void)::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
}

void EventPoller::Wake() {
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
}

Status EventPoller::Wait(std::vector<uint64_t>& tags) {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  tags.clear();
  const int n = ::epoll_wait(epoll_.get(), events, kMaxEvents, -1);
  if (n < 0) return errno == EINTR ? Status() : Status::FromErrno("epoll_wait", errno);
  for (int i = 0; i < n; ++i) {
    const uint64_t tag = events[i].data.u64;
    uint64_t count = 0;
    if (tag == tags_.timer) (void)!::read(timer_.get(), &count, sizeof(count));
    if (tag == tags_.wake) (void)!::read(wake_.get(), &count, sizeof(count));
    tags.push_back(tag);
  }
  return {};
}

std::vector<int> EventPoller::TakeSignals() {
  std::vector<int> signals;
  if (!signal_) return signals;
  signalfd_siginfo info{};
  while (::read(signal_.get(), &info, sizeof(info)) == sizeof(info))
    signals.push_back(static_cast<int>(info.ssi_signo));
  return signals;
}

}  // namespace gshare::arbiter
