// Unit tests of EventPoller (arbiter/src/event_poller.h): tagged descriptors, a muted one, the
// absolute timer, Stop()'s wake-up and SIGTERM through the signalfd, on real kernel objects.
#include "event_poller.h"

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

constexpr EventPoller::Tags kTags{/*timer=*/1, /*wake=*/2, /*signal=*/3};

uint64_t MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

bool Has(const std::vector<uint64_t>& tags, uint64_t tag) {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

void Ring(int fd) {
  const uint64_t one = 1;
  ASSERT_EQ(::write(fd, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
}

TEST(EventPoller, AReadyDescriptorIsReportedUnderItsTag) {
  EventPoller poller;
  ASSERT_TRUE(poller.Open(kTags, false).ok());
  shm::UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(poller.Add(fd.get(), 77).ok());
  Ring(fd.get());
  std::vector<uint64_t> tags;
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{77});
  EXPECT_FALSE(poller.Add(fd.get(), 78).ok());  // already watched: epoll_ctl's error
}

TEST(EventPoller, AMutedOrRemovedDescriptorIsNotReported) {
  EventPoller poller;
  ASSERT_TRUE(poller.Open(kTags, false).ok());
  shm::UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(poller.Add(fd.get(), 77).ok());
  Ring(fd.get());
  ASSERT_TRUE(poller.Watch(fd.get(), 77, /*readable=*/false).ok());
  poller.ArmAt(MonotonicNs() + 20'000'000);  // something else to end the wait
  std::vector<uint64_t> tags;
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{kTags.timer});
  ASSERT_TRUE(poller.Watch(fd.get(), 77, /*readable=*/true).ok());
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{77});  // still ready: reported again once unmuted
  poller.Remove(fd.get());
  poller.Remove(fd.get());  // harmless
  poller.Wake();
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{kTags.wake});
}

TEST(EventPoller, TheTimerFiresAtItsAbsoluteTimeAndIsConsumed) {
  EventPoller poller;
  ASSERT_TRUE(poller.Open(kTags, false).ok());
  const uint64_t at = MonotonicNs() + 30'000'000;
  poller.ArmAt(at);
  std::vector<uint64_t> tags;
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{kTags.timer});
  EXPECT_GE(MonotonicNs(), at);
  // A time already past fires at once; the expiry was consumed, so the wake-up alone follows.
  poller.ArmAt(1);
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{kTags.timer});
  poller.Wake();
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{kTags.wake});
}

TEST(EventPoller, ADisarmedTimerAndAConsumedWakeUpStayQuiet) {
  EventPoller poller;
  ASSERT_TRUE(poller.Open(kTags, false).ok());
  poller.ArmAt(MonotonicNs() + 10'000'000);
  poller.ArmAt(UINT64_MAX);
  poller.Wake();
  poller.Wake();  // two wake-ups before a wait are one
  std::vector<uint64_t> tags;
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{kTags.wake});
  ::usleep(30'000);  // past the disarmed time
  poller.ArmAt(MonotonicNs() + 10'000'000);
  ASSERT_TRUE(poller.Wait(tags).ok());
  EXPECT_EQ(tags, std::vector<uint64_t>{kTags.timer});  // no wake-up left, no earlier expiry
}

TEST(EventPoller, SigtermArrivesThroughTheSignalDescriptor) {
  sigset_t before;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &before), 0);
  {
    EventPoller poller;
    ASSERT_TRUE(poller.Open(kTags, true).ok());
    EXPECT_TRUE(poller.TakeSignals().empty());
    ASSERT_EQ(::pthread_kill(::pthread_self(), SIGTERM), 0);  // blocked: pending, not fatal
    std::vector<uint64_t> tags;
    ASSERT_TRUE(poller.Wait(tags).ok());
    EXPECT_TRUE(Has(tags, kTags.signal));
    EXPECT_EQ(poller.TakeSignals(), std::vector<int>{SIGTERM});
    EXPECT_TRUE(poller.TakeSignals().empty());
  }
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, &before, nullptr), 0);
}

}  // namespace
}  // namespace gshare::arbiter
