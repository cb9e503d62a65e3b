// MPS clients' context memory in the arbiter's accounting (docs/arbiter.md, "MPS context
// memory"), driven in-process with scripted clients (the harness is inprocess_arbiter.h): an MPS
// client's context is reserved on its GPU beside its quota from registration until it leaves
// (handed to its orphan when it is disconnected alive), a share whose context the GPU cannot
// hold is answered "not co-run", and shares leave room for the largest vGPU that must still be
// swapped in on that GPU (registered, or answered "not co-run" moments ago).
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "inprocess_arbiter.h"

namespace gshare::arbiter {
namespace {

using inproc::InProcessArbiter;
using inproc::OwnQuery;
using inproc::RegisterScripted;
using inproc::Scripted;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint64_t kMiB = 1ULL << 20;

// GPU 0's entry of the status once `done` holds for it (bounded wait), else the last one seen.
template <typename Done>
json GpuWhen(InProcessArbiter& arb, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  json gpu;
  for (;;) {
    const json status = arb.Status();
    if (status.contains("gpus") && !status["gpus"].empty()) gpu = status["gpus"][0];
    if ((!gpu.is_null() && done(gpu)) || std::chrono::steady_clock::now() > deadline) return gpu;
    std::this_thread::sleep_for(milliseconds(5));
  }
}

uint64_t Field(const json& gpu, const char* key) { return gpu.value(key, uint64_t{0}); }

// GPU 0 marked for co-running, contexts of `at_full` at a 100% share (`floor` at 0%).
void CountContexts(InProcessArbiter& arb, uint64_t at_full, uint64_t floor = 0) {
  arb.config().corun.gpus = {0};
  arb.config().corun.mps_context_bytes = at_full;
  arb.config().corun.mps_context_floor_bytes = floor;
}

// Starts `arb` (control socket on), contexts of 200 MiB at 100%, and registers m, an MPS client
// at 50% (64 MiB, resident; its context 100 MiB). Call with ASSERT_NO_FATAL_FAILURE.
void StartWithMpsClient(InProcessArbiter& arb, Scripted& m) {
  CountContexts(arb, 200 * kMiB);
  arb.EnableControl();
  ASSERT_TRUE(arb.Start());
  m = RegisterScripted(arb.socket(), "m", 64 * kMiB, 0, shm::kNoGpu, 0, /*mps_share=*/50);
  ASSERT_NE(m.chan, nullptr);
}

// m, an MPS client at 50% (64 MiB), holds 100 MiB of context beside its quota; p, no MPS
// client, none. When m leaves, its context goes with it. Before contexts were counted the
// arbiter reserved 128 MiB here and promised the other 896 MiB, of which a real GPU had ~100
// MiB less per MPS client (517 MiB each at 100% on the H200).
TEST(MpsContext, AnMpsClientsContextIsReservedBesideItsQuotaUntilItLeaves) {
  InProcessArbiter arb;
  Scripted m;
  ASSERT_NO_FATAL_FAILURE(StartWithMpsClient(arb, m));
  Scripted p = RegisterScripted(arb.socket(), "p", 64 * kMiB);
  ASSERT_NE(p.chan, nullptr);
  json gpu = GpuWhen(arb, [](const json& g) { return Field(g, "reserved_bytes") == 228 * kMiB; });
  EXPECT_EQ(Field(gpu, "mps_context_bytes"), 100 * kMiB) << gpu.dump();
  EXPECT_EQ(Field(gpu, "reserved_bytes"), 228 * kMiB) << gpu.dump();  // 64 + 100 + 64

  ASSERT_TRUE(shm::SendClientGoodbye(m.reg.connection.get(), "done", seconds(1)).ok());
  gpu = GpuWhen(arb, [](const json& g) { return Field(g, "mps_context_bytes") == 0; });
  EXPECT_EQ(Field(gpu, "mps_context_bytes"), 0u) << gpu.dump();
  EXPECT_EQ(Field(gpu, "reserved_bytes"), 64 * kMiB) << gpu.dump();  // p's
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.invariant_violations, 0u);
}

// An MPS client disconnected while alive keeps its context (and its quota) on its GPU: its
// orphan holds both, not just the quota.
TEST(MpsContext, AnOrphanedMpsClientKeepsItsContextReserved) {
  InProcessArbiter arb;
  Scripted m;
  ASSERT_NO_FATAL_FAILURE(StartWithMpsClient(arb, m));
  ASSERT_TRUE(inproc::MakeMalformedAndWaitForDisconnect(*m.chan, m.reg.connection.get()));
  const json gpu = GpuWhen(arb, [](const json& g) { return Field(g, "orphaned_bytes") != 0; });
  EXPECT_EQ(Field(gpu, "orphaned_bytes"), 164 * kMiB) << gpu.dump();
  EXPECT_EQ(Field(gpu, "reserved_bytes"), 164 * kMiB) << gpu.dump();
  EXPECT_EQ(Field(gpu, "mps_context_bytes"), 0u) << gpu.dump();  // registered clients' only
  const ArbiterStats stats = arb.Finish();
  EXPECT_EQ(stats.invariant_violations, 0u);
}

// With m (an MPS client whose context takes at least 400 MiB) on the 1 GiB GPU 0, a share for
// 64 MiB more is answered "not co-run": its own context would not fit. Counting quotas only
// (128 MiB), it was answered a share, and its process would have failed its allocations.
TEST(MpsContext, AShareWhoseContextDoesNotFitIsAnsweredNotCorun) {
  InProcessArbiter arb;
  CountContexts(arb, 512 * kMiB, /*floor=*/400 * kMiB);
  ASSERT_TRUE(arb.Start());
  Scripted m = RegisterScripted(arb.socket(), "m", 64 * kMiB, 0, shm::kNoGpu, 0, /*mps_share=*/50);
  ASSERT_NE(m.chan, nullptr);
  const shm::ShareAnswer answer = OwnQuery(arb.socket(), 64 * kMiB);
  EXPECT_FALSE(answer.corun);
  EXPECT_NE(answer.reason.find("MPS context do not fit beside"), std::string::npos) << answer.reason;
}

// A vGPU that can be swapped needs room beside what MPS clients pin, or it never comes in: with
// p (700 MiB, no MPS client) registered on the 1 GiB GPU 0, a share for 400 MiB (which would
// pin 400 MiB: mps_swaps_verified is false) is answered "not co-run". On simcuda's one-GPU
// co-run demo an exclusive 1.12 GiB function waited for ever beside the MPS clients' pins.
TEST(MpsContext, AShareLeavesRoomForTheLargestSwappableVgpu) {
  InProcessArbiter arb;
  CountContexts(arb, 0);
  ASSERT_TRUE(arb.Start());
  Scripted p = RegisterScripted(arb.socket(), "p", 700 * kMiB);
  ASSERT_NE(p.chan, nullptr);
  const shm::ShareAnswer big = OwnQuery(arb.socket(), 400 * kMiB);
  EXPECT_FALSE(big.corun);
  EXPECT_NE(big.reason.find("leave no room for a swappable 700 MiB vGPU"), std::string::npos)
      << big.reason;
  const shm::ShareAnswer small = OwnQuery(arb.socket(), 300 * kMiB);  // 300 + 700 fit
  EXPECT_TRUE(small.corun) << small.reason;
}

// A process of another uid is answered "not co-run" (one uid per MPS server): it will run
// exclusively on GPU 0, so the shares answered after it leave room for its 600 MiB vGPU even
// before it registers. m (the test's uid, MPS, 300 MiB) pins 300 MiB; a share for 200 MiB more
// would leave 524 MiB.
TEST(MpsContext, AVgpuAnsweredNotCorunIsRoomSharesMustLeave) {
  InProcessArbiter arb;
  CountContexts(arb, 0);
  inproc::OtherUidQuerier other(arb.socket(), inproc::kOtherUid, 600 * kMiB);  // before Start
  ASSERT_TRUE(arb.Start());
  Scripted m = RegisterScripted(arb.socket(), "m", 300 * kMiB, 0, shm::kNoGpu, 0, /*mps_share=*/50);
  ASSERT_NE(m.chan, nullptr);
  const shm::ShareAnswer before = OwnQuery(arb.socket(), 200 * kMiB);
  EXPECT_TRUE(before.corun) << before.reason;
  const std::string answer = other.Ask();
  EXPECT_EQ(answer.rfind("corun=0 gpu=0 reason=", 0), 0U) << answer;
  const shm::ShareAnswer after = OwnQuery(arb.socket(), 200 * kMiB);
  EXPECT_FALSE(after.corun);
  EXPECT_NE(after.reason.find("leave no room for a swappable 600 MiB vGPU"), std::string::npos)
      << after.reason;
}

}  // namespace
}  // namespace gshare::arbiter
