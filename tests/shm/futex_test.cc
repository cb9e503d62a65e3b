// Futex wait/wake: timeouts, value changes, EINTR, and wake-ups across processes through a
// channel (a helper process sleeps in WaitForGrant / WaitForSwapOrder until the arbiter acts).
#include "gshare/shm/futex.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <thread>

#include "gshare/shm/channel.h"
#include "test_util.h"

namespace gshare::shm {
namespace {

using namespace std::chrono_literals;

TEST(FutexTest, TimeoutAndChangedValue) {
  alignas(4) uint32_t word = 5;
  auto r = FutexWait(&word, 5, 2ms);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, FutexWaitResult::kTimedOut);
  r = FutexWait(&word, 6, 10s);  // not the expected value: returns at once
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, FutexWaitResult::kChanged);
  EXPECT_EQ(*FutexWait(&word, 5, 0ns), FutexWaitResult::kTimedOut);
  EXPECT_EQ(*FutexWake(&word, 1), 0);  // nobody waits
  alignas(4) char bytes[8] = {};
  EXPECT_EQ(FutexWait(reinterpret_cast<const uint32_t*>(bytes + 1), 0, 1ms).status().code(),
            StatusCode::kInvalidArgument);
}

void NoOpHandler(int) {}

TEST(FutexTest, SignalsDoNotEndTheWait) {
  struct sigaction sa{};
  sa.sa_handler = NoOpHandler;  // no SA_RESTART: the futex call returns EINTR
  struct sigaction old{};
  ASSERT_EQ(::sigaction(SIGUSR1, &sa, &old), 0);
  alignas(4) uint32_t word = 0;
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    auto r = FutexWait(&word, 0, 30s);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(__atomic_load_n(&word, __ATOMIC_SEQ_CST), 1U);  // only the real change ended it
    done = true;
  });
  for (int i = 0; i < 20; ++i) {
    ::pthread_kill(waiter.native_handle(), SIGUSR1);
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_FALSE(done.load());
  __atomic_store_n(&word, 1U, __ATOMIC_SEQ_CST);
  (void)FutexWake(&word, 1);
  waiter.join();
  EXPECT_TRUE(done.load());
  ::sigaction(SIGUSR1, &old, nullptr);
}

TEST(FutexTest, GrantWakesClientBlockedInAnotherProcess) {
  auto ch = ArbiterChannel::Create(ChannelInit{3, 0, 1, 1 << 20, 20'000'000, 10});
  ASSERT_TRUE(ch.ok());
  const int fd = ch->channel_fd();
  const int db = ch->doorbell_fd();
  auto child = testing::SpawnHelper({"wait-grant", std::to_string(fd), std::to_string(db), "30000"}, {fd, db});
  // Wait until the child sleeps in the futex (it published itself as a waiter).
  ASSERT_TRUE(testing::WaitUntil([&] { return LoadSeqCst(&ch->layout()->client_token.token_waiters) == 1; }));
  const uint32_t seq = ch->Grant(0, MonotonicNowNs() + 1'000'000);
  const std::string out = testing::ReadAll(child.stdout_fd);
  ::close(child.stdout_fd);
  EXPECT_EQ(testing::WaitChild(child.pid), 0) << out;
  EXPECT_EQ(out, "granted seq=" + std::to_string(seq) + " gpu=0 holds=1\n");
  EXPECT_TRUE(ch->Released());  // the helper released before exiting
  EXPECT_EQ(LoadSeqCst(&ch->layout()->client_token.token_waiters), 0U);
}

TEST(FutexTest, SwapOrderWakesClientAndAckReturns) {
  auto ch = ArbiterChannel::Create(ChannelInit{4, 0, 1, 1 << 20, 20'000'000, 10});
  ASSERT_TRUE(ch.ok());
  const int fd = ch->channel_fd();
  const int db = ch->doorbell_fd();
  auto child = testing::SpawnHelper({"wait-order", std::to_string(fd), std::to_string(db), "0", "30000"}, {fd, db});
  ASSERT_TRUE(testing::WaitUntil([&] { return LoadSeqCst(&ch->layout()->client_token.order_waiters) == 1; }));
  ch->ArmDoorbell();
  const uint32_t seq = ch->IssueSwapOrder(SwapOp::kSwapOut, 0, MonotonicNowNs());
  const std::string out = testing::ReadAll(child.stdout_fd);
  ::close(child.stdout_fd);
  EXPECT_EQ(testing::WaitChild(child.pid), 0) << out;
  EXPECT_EQ(out, "order seq=1 op=1 gpu=0\n");
  auto v = ch->ReadClient(MonotonicNowNs());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->ack_seq, seq);
  EXPECT_EQ(v->ack_bytes_moved, 12345U);
  EXPECT_EQ(v->residency, Residency::kSwappedOut);
  EXPECT_EQ(*ch->DrainDoorbell(), 1U);  // the ack rang the armed doorbell
}

TEST(FutexTest, ClientWaitTimesOut) {
  auto ch = ArbiterChannel::Create(ChannelInit{6, 0, 1, 1 << 20, 20'000'000, 10});
  ASSERT_TRUE(ch.ok());
  const int fd = ch->channel_fd();
  const int db = ch->doorbell_fd();
  auto [code, out] = testing::RunHelper({"wait-grant", std::to_string(fd), std::to_string(db), "20"}, {fd, db});
  EXPECT_EQ(code, 4) << out;
}

}  // namespace
}  // namespace gshare::shm
