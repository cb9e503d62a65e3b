// Orphan reservations (docs/arbiter.md, "Orphans") with the arbiter in-process and scripted
// clients: a live process the arbiter disconnects (here: for a malformed channel) keeps its
// reservation counted until it registers again (replaced, no double count, no overshoot when it
// comes back resident) or exits (its pidfd). The arbiter runs without a driver, so it cannot
// tell whether a process holds device memory and must assume it does.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gshare/shm/atomic_word.h"
#include "gshare/shm/futex.h"
#include "inprocess_arbiter.h"

namespace gshare::arbiter {
namespace {

using inproc::InProcessArbiter;
using inproc::MakeMalformedAndWaitForDisconnect;
using inproc::ObeyNextOrder;
using inproc::RegisterScripted;
using inproc::Scripted;
using nlohmann::json;
using std::chrono::seconds;

constexpr uint64_t kQuota = 600ULL << 20;  // two never fit on the 1 GiB GPU together

// Polls the arbiter's status until `ok` accepts it (safety net 30 s); the last status.
json WaitForStatus(const InProcessArbiter& arb, const std::function<bool(const json&)>& ok) {
  json st;
  const auto end = std::chrono::steady_clock::now() + seconds(30);
  do {
    st = arb.Status();
    if (st.is_object() && ok(st)) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < end);
  return st;
}

uint64_t Reserved(const json& st) { return st["gpus"][0]["reserved_bytes"].get<uint64_t>(); }

// A live process disconnected as malformed keeps its 600 MiB reserved (an orphan). When the
// same process registers again, resident, its new reservation replaces the orphan: 600 MiB
// reserved, not 1.2 GiB, and no overshoot. (Every scripted client here is the test process
// itself, so a second vGPU registering would replace the orphan too: the room an orphan keeps
// from other processes is the next test's.)
TEST(ArbiterOrphan, LiveDisconnectedProcessKeepsItsReservationUntilItRegistersAgain) {
  InProcessArbiter arb;
  arb.config().policy = "fifo";
  arb.EnableControl();
  ASSERT_TRUE(arb.Start());
  Scripted a = RegisterScripted(arb.socket(), "a", kQuota);  // fits: resident
  ASSERT_NE(a.chan, nullptr);
  ASSERT_TRUE(MakeMalformedAndWaitForDisconnect(*a.chan, a.reg.connection.get()));

  json st = WaitForStatus(arb, [](const json& s) { return s["clients"] == 0; });
  EXPECT_EQ(Reserved(st), kQuota) << "the disconnected live process's reservation was released\n"
                                  << st.dump(1);
  EXPECT_EQ(st["gpus"][0]["orphaned_bytes"].get<uint64_t>(), kQuota) << st.dump(1);
  ASSERT_EQ(st["orphans"].size(), 1U) << st.dump(1);
  EXPECT_EQ(st["orphans"][0]["pid"].get<int>(), ::getpid());
  EXPECT_EQ(st["orphans"][0]["bytes"].get<uint64_t>(), kQuota);
  EXPECT_EQ(st["orphans"][0]["reason"], "malformed_channel");
  EXPECT_EQ(st["orphans"][0]["function"], "a");

  // The same process (the orphan's pidfd has not signalled) comes back resident: replaced.
  Scripted again = RegisterScripted(arb.socket(), "a", kQuota,
                                    shm::kFlagReRegister | shm::kFlagResident, 0,
                                    a.reg.reply.client_id);
  ASSERT_NE(again.chan, nullptr);
  st = WaitForStatus(arb, [](const json& s) { return s["clients"] == 1; });
  EXPECT_EQ(Reserved(st), kQuota) << st.dump(1);
  EXPECT_EQ(st["gpus"][0]["orphaned_bytes"].get<uint64_t>(), 0U) << st.dump(1);
  EXPECT_TRUE(st["orphans"].empty()) << st.dump(1);
  EXPECT_EQ(st["counters"]["orphans_released_reregistered"], 1) << st.dump(1);

  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.malformed_channels, 1U);
  EXPECT_EQ(stats.orphans_created, 1U);
  EXPECT_EQ(stats.orphans_released_reregistered, 1U);
  EXPECT_EQ(stats.orphans_released_exited, 0U);
  EXPECT_EQ(stats.gpus[0].overshoot_events, 0U);
  EXPECT_LE(stats.gpus[0].peak_reserved_bytes, stats.gpus[0].usable_bytes);
}

// An orphan is released when its process exits: a child process registers, is disconnected as
// malformed and lives on; a vGPU that needs the room waits (no swap-in is ordered) until the
// child exits, then it is swapped in.
TEST(ArbiterOrphan, OrphanIsReleasedWhenItsProcessExitsAndAWaiterGetsTheRoom) {
  InProcessArbiter arb;
  arb.config().policy = "fifo";
  arb.EnableControl();
  int go[2];
  int done[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(done), 0);
  // Forked before the arbiter's thread exists: the child is a plain single-threaded process.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(go[1]);  // the parent's end: its exit (a failed assertion) ends the child's wait
    ::close(done[0]);
    char byte = 0;
    if (::read(go[0], &byte, 1) != 1) ::_exit(2);
    shm::RegisterRequest req;
    req.quota_bytes = kQuota;
    req.slo_ms = 100;
    req.function_name = "child";
    auto reg = shm::Register(arb.socket(), req, seconds(10));
    if (!reg.ok()) ::_exit(3);
    auto chan = shm::ClientChannel::Attach(std::move(reg->channel), std::move(reg->doorbell));
    if (!chan.ok() || !MakeMalformedAndWaitForDisconnect(*chan, reg->connection.get())) ::_exit(4);
    byte = 'o';
    if (::write(done[1], &byte, 1) != 1) ::_exit(5);
    (void)::read(go[0], &byte, 1);  // lives (disconnected) until told to exit
    ::_exit(0);
  }
  ::close(go[0]);
  ::close(done[1]);
  ASSERT_TRUE(arb.Start());
  char byte = 'g';
  ASSERT_EQ(::write(go[1], &byte, 1), 1);
  pollfd p{done[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30'000), 1);
  ASSERT_EQ(::read(done[0], &byte, 1), 1) << "the child was not disconnected";

  json st = WaitForStatus(arb, [](const json& s) { return !s["orphans"].empty(); });
  ASSERT_EQ(st["orphans"].size(), 1U) << st.dump(1);
  EXPECT_EQ(st["orphans"][0]["pid"].get<pid_t>(), child);
  EXPECT_EQ(Reserved(st), kQuota);

  // b wants the GPU and waits: its swap-in is not ordered while the orphan holds the room.
  Scripted b = RegisterScripted(arb.socket(), "b", kQuota);
  ASSERT_NE(b.chan, nullptr);
  const shm::SwapOrder out = ObeyNextOrder(b, 0, 0);
  ASSERT_EQ(out.op, shm::SwapOp::kSwapOut);
  (void)b.chan->ReportBurstStart(shm::MonotonicNowNs());
  (void)b.chan->RequestSwapIn();
  (void)b.chan->NotifyArbiter();
  st = WaitForStatus(arb, [](const json& s) { return !s["gpus"][0]["queue"].empty(); });
  ASSERT_EQ(st["gpus"][0]["queue"].size(), 1U) << st.dump(1);  // b's request reached the policy
  EXPECT_EQ(Reserved(st), kQuota) << "a swap-in was reserved beside the orphan\n" << st.dump(1);

  // The child exits: its orphan goes and b is swapped in.
  byte = 'x';
  ASSERT_EQ(::write(go[1], &byte, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(ObeyNextOrder(b, out.seq, kQuota).op, shm::SwapOp::kSwapIn);
  st = WaitForStatus(arb, [](const json& s) { return s["orphans"].empty(); });
  EXPECT_TRUE(st["orphans"].empty()) << st.dump(1);
  EXPECT_EQ(st["counters"]["orphans_released_exited"], 1) << st.dump(1);
  ::close(go[1]);
  ::close(done[0]);

  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.orphans_created, 1U);
  EXPECT_EQ(stats.orphans_released_exited, 1U);
  EXPECT_EQ(stats.gpus[0].overshoot_events, 0U);
  EXPECT_LE(stats.gpus[0].peak_reserved_bytes, stats.gpus[0].usable_bytes);
}

}  // namespace
}  // namespace gshare::arbiter
