// Fault injection (issue 8): kill -9 at every protocol step of both sides, arbiter restarts
// during swaps, clients that stall, stop reading their channel or flood it (channel or
// doorbell), device OOM during swap-in and host memory pressure, with real processes on
// simcuda (fault_env.h). After every fault: the survivors finish with every byte verified, the
// arbiter keeps serving (a new function registers and runs), its reservations return to zero,
// simcuda's device accounting returns to zero, and no shared-memory segment is left behind.
// The table is docs/reliability.md.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fault_env.h"

namespace gshare::fault {
namespace {

using arbiter::testing::ExitCode;
using arbiter::testing::ReadFile;
using arbiter::testing::WaitFor;
using shm::Event;
using shm::EventType;
using std::chrono::milliseconds;
using std::chrono::seconds;

const auto kEventTimeout = seconds(60) * TimeScale();
constexpr int kProcessRunning = 0;  // CU_PROCESS_STATE_RUNNING (cuda.h), FaultNode::ProcessState


bool HasLine(const std::string& path, const std::string& text) {
  return ReadFile(path).find(text) != std::string::npos;
}

// A node with one simulated GPU of `gpu` and two functions whose quotas do not fit together,
// so the arbiter swaps one out whenever the other runs. Copies run at 1 GB/s, so a swap of the
// big block takes a few hundred milliseconds: long enough to kill a process in the middle.
class FaultTest : public ::testing::Test {
 protected:
  // A long preemption grace: a function verifying 192 MiB in one kernel launch (a CPU twin on a
  // loaded machine) may take longer than the default 200 ms to drain, and enforcement is not
  // what these tests inject (FaultEnforcement does).
  explicit FaultTest(std::vector<std::string> arbiter_args = {"--policy", "fifo", "--slice", "5ms",
                                                              "--preempt-grace", "10s"},
                     const std::string& gpu = "1x512MiB")
      : node_(gpu, "1", std::move(arbiter_args)) {}

  void SetUp() override { ASSERT_TRUE(node_.arbiter().Start()) << Log(); }

  std::string Log() { return ReadFile(node_.arbiter().log()) + Dump(); }

  // The event ring of the arbiter's first run, one line per record (for failure messages).
  std::string Dump(int start = 0) {
    std::string s = "--- events:\n";
    for (const Event& e : node_.Events(start))
      s += std::to_string(e.index) + " type=" + std::to_string(static_cast<int>(e.type)) +
           " client=" + std::to_string(e.client_id) + " args=" + std::to_string(e.args[0]) + "," +
           std::to_string(e.args[1]) + "," + std::to_string(e.args[2]) + "\n";
    return s;
  }

  // A function that holds a 192 MiB block plus up to 32 MiB of random allocations in a
  // 320 MiB vGPU, taking `turns` turns.
  Worker SpawnPairMember(const std::string& name, uint64_t seed, int turns = 14) {
    return SpawnFunction({name, "320MiB", seed, 192, 32, turns, 8, 30, {}, {}});
  }

  // Starts a function (tracked: killed with the node if the test ends early).
  Worker SpawnFunction(const WorkerSpec& spec) {
    Worker w = node_.Spawn(spec);
    EXPECT_GT(w.pid, 0);
    all_pids_.push_back(w.pid);
    return w;
  }

  // Waits for a worker and checks it finished with every byte intact.
  void ExpectIntact(const Worker& w, seconds timeout = seconds(180) * TimeScale()) {
    int code = 0;
    const nlohmann::json r = node_.Finish(w, timeout, &code);
    EXPECT_EQ(code, 0) << node_.Describe(w) << Log();
    ASSERT_TRUE(r.is_object()) << node_.Describe(w);
    EXPECT_EQ(r["ok"], true) << r.dump();
    EXPECT_EQ(r["errors"], 0) << r.dump();
    EXPECT_GT(r["verified_bytes"].get<uint64_t>(), 0u) << r.dump();
  }

  void Kill(const Worker& w) {
    ::kill(w.pid, SIGKILL);
    (void)WaitFor(w.pid, seconds(30));
  }

  // Whether `w` has data on the device worth killing it for (it filled its big block).
  bool Ready(const Worker& w) { return HasLine(w.out, "ready\n"); }

  // The client id the arbiter gave the process `pid` in its `start`-th run (0 if none yet).
  uint32_t ClientOf(pid_t pid, int start = 0) {
    for (const Event& e : node_.Events(start))
      if (e.type == EventType::kRegister && static_cast<pid_t>(e.args[2]) == pid) return e.client_id;
    return 0;
  }

  // kill -9 of the arbiter, a new one 200 ms later (its events are the ring of run 1, 2, ...).
  bool KillAndRestartArbiter() {
    all_pids_.push_back(node_.arbiter().pid());
    node_.arbiter().Kill();
    std::this_thread::sleep_for(milliseconds(200));
    return node_.arbiter().Start();
  }

  // A swap-in, still copying 10 ms after its begin record, of a function that was swapped out
  // with more than 64 MiB (MidSwap below).
  std::optional<Event> MidSwapInWithData();

  // After the fault: the arbiter still serves (a new function registers, runs, verifies), then
  // it stops with no reservation left, simcuda holds no device memory, no segment is left.
  // `restarted`: the arbiter was restarted while functions were resident; they re-register
  // resident (fail-open keeps them on the GPU) and may together exceed it, which the arbiter
  // accepts and counts as overshoot (docs/arbiter.md, invariant 1), so the peak is not checked.
  void ExpectCleanNode(int start = 0, bool restarted = false) {
    WorkerSpec probe;
    probe.name = "after";
    probe.quota = "64MiB";
    probe.seed = 99;
    probe.big_mib = 16;
    probe.budget_mib = 16;
    probe.turns = 3;
    const Worker w = node_.Spawn(probe);
    all_pids_.push_back(w.pid);
    ExpectIntact(w);
    EXPECT_TRUE(HasLine(w.log, "registered with the arbiter")) << node_.Describe(w);
    EXPECT_TRUE(node_.WaitForEvent(start, [&](const Event& e) {
      return e.type == EventType::kRegister && static_cast<pid_t>(e.args[2]) == w.pid;
    }, seconds(5))) << "the new function did not register with the arbiter's run " << start;
    all_pids_.push_back(node_.arbiter().pid());
    const nlohmann::json summary = node_.arbiter().Stop();
    ASSERT_TRUE(summary.is_object()) << Log();
    const auto& gpu = summary["gpus"][0];
    EXPECT_EQ(gpu["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump() << Log();
    if (!restarted) {
      EXPECT_EQ(gpu["overshoot_events"], 0) << summary.dump() << Log();
      EXPECT_LE(gpu["peak_reserved_bytes"].get<uint64_t>(), gpu["usable_bytes"].get<uint64_t>());
    }
    const auto used = node_.DeviceUsed();
    ASSERT_TRUE(used.has_value());
    EXPECT_EQ(*used, 0u) << "device memory still accounted to someone";
    const std::vector<std::string> leftover = node_.LeftoverShm(all_pids_);
    EXPECT_TRUE(leftover.empty()) << "left in /dev/shm: " << leftover.front();
    summary_ = summary;
  }

  FaultNode node_;
  std::vector<pid_t> all_pids_;
  nlohmann::json summary_;
};

// Finds a swap of `type` (begin) whose client has data on the device and that is still running
// `grace` later (its end event not yet recorded); returns the begin event.
std::optional<Event> MidSwap(FaultNode& node, EventType begin, EventType end,
                             const std::function<bool(uint32_t client)>& eligible,
                             milliseconds grace) {
  std::set<uint64_t> seen;
  const auto deadline = std::chrono::steady_clock::now() + kEventTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto b = node.WaitForEvent(0, [&](const Event& e) {
      return e.type == begin && !seen.count(e.index) && eligible(e.client_id);
    }, milliseconds(200));
    if (!b) continue;
    seen.insert(b->index);
    std::this_thread::sleep_for(grace);
    bool ended = false;
    for (const Event& e : node.Events(0))
      ended = ended || (e.type == end && e.client_id == b->client_id && e.args[0] == b->args[0]);
    if (!ended) return b;
  }
  return std::nullopt;
}

std::optional<Event> FaultTest::MidSwapInWithData() {
  return MidSwap(node_, EventType::kSwapInBegin, EventType::kSwapInEnd,
      [&](uint32_t c) {
        for (const Event& e : node_.Events(0))
          if (e.type == EventType::kSwapOutEnd && e.client_id == c && e.args[1] > (64u << 20)) return true;
        return false;
      },
      milliseconds(10));
}

// Client side, swap-out mid-copy: a function is killed while the arbiter waits for its swap-out
// acknowledgement (its 192 MiB are being copied to host). The other function gets the GPU.
TEST_F(FaultTest, FunctionKilledMidSwapOut) {
  const Worker a = SpawnPairMember("a", 1);
  const Worker b = SpawnPairMember("b", 2);
  std::optional<Event> swap = MidSwap(node_, EventType::kSwapOutBegin, EventType::kSwapOutEnd,
      [&](uint32_t c) { return (c == ClientOf(a.pid) && Ready(a)) || (c == ClientOf(b.pid) && Ready(b)); },
      milliseconds(20));
  ASSERT_TRUE(swap) << "no swap-out of a function with data seen" << Log();
  const bool victim_a = swap->client_id == ClientOf(a.pid);
  Kill(victim_a ? a : b);
  ExpectIntact(victim_a ? b : a);
  ExpectCleanNode();
  EXPECT_GE(summary_["client_deaths"].get<int>(), 1) << summary_.dump();
}

// Client side, swap-in mid-copy: a function is killed while its data is copied back.
TEST_F(FaultTest, FunctionKilledMidSwapIn) {
  const Worker a = SpawnPairMember("a", 3);
  const Worker b = SpawnPairMember("b", 4);
  std::optional<Event> swap = MidSwapInWithData();
  ASSERT_TRUE(swap) << "no swap-in of a function with data seen" << Log();
  const bool victim_a = swap->client_id == ClientOf(a.pid);
  Kill(victim_a ? a : b);
  ExpectIntact(victim_a ? b : a);
  ExpectCleanNode();
}

// Arbiter restart during swaps: the arbiter is killed while a swap-out is being copied and
// started again; both functions carry on (stand-alone, then re-registered) with their data.
TEST_F(FaultTest, ArbiterKilledMidSwapAndRestarted) {
  const Worker a = SpawnPairMember("a", 5);
  const Worker b = SpawnPairMember("b", 6);
  std::optional<Event> swap = MidSwap(node_, EventType::kSwapOutBegin, EventType::kSwapOutEnd,
      [&](uint32_t c) { return (c == ClientOf(a.pid) && Ready(a)) || (c == ClientOf(b.pid) && Ready(b)); },
      milliseconds(20));
  ASSERT_TRUE(swap) << Log();
  ASSERT_TRUE(KillAndRestartArbiter()) << Log();
  ExpectIntact(a);
  ExpectIntact(b);
  ExpectCleanNode(1, /*restarted=*/true);
  EXPECT_GE(summary_["re_registrations"].get<int>(), 1) << summary_.dump() << Log();
}

// Arbiter restart during a swap-in: the arbiter is killed while the data of a function that
// was swapped out with more than 64 MiB is copied back, and started again; both functions
// carry on with every byte (the swap-in finishes inside the shim, which does not need the
// arbiter for the copy; the functions re-register).
TEST_F(FaultTest, ArbiterKilledMidSwapInAndRestarted) {
  const Worker a = SpawnPairMember("a", 31);
  const Worker b = SpawnPairMember("b", 32);
  std::optional<Event> swap = MidSwapInWithData();
  ASSERT_TRUE(swap) << "no swap-in of a function with data seen" << Log();
  ASSERT_TRUE(KillAndRestartArbiter()) << Log();
  ExpectIntact(a);
  ExpectIntact(b);
  ExpectCleanNode(1, /*restarted=*/true);
  EXPECT_GE(summary_["re_registrations"].get<int>(), 1) << summary_.dump() << Log();
}

// Grant: the token holder is killed while it holds the GPU; the waiting function is granted.
TEST_F(FaultTest, HolderKilledWhileHolding) {
  const Worker a = SpawnPairMember("a", 7);
  const Worker b = SpawnPairMember("b", 8);
  auto grant = node_.WaitForEvent(0, [&](const Event& e) {
    return e.type == EventType::kGrant && e.client_id == ClientOf(a.pid) && Ready(a);
  }, kEventTimeout);
  ASSERT_TRUE(grant) << Log();
  Kill(a);
  ExpectIntact(b);
  ExpectCleanNode();
}

// Grant, arbiter side: the arbiter is killed while a function waits for the token; after a
// restart both finish.
TEST_F(FaultTest, ArbiterKilledWhileClientWaits) {
  const Worker a = SpawnPairMember("a", 9);
  const Worker b = SpawnPairMember("b", 10);
  // b starts a burst (it waits) after a was granted and before a yields.
  std::optional<Event> waiting;
  const auto deadline = std::chrono::steady_clock::now() + kEventTimeout;
  while (!waiting && std::chrono::steady_clock::now() < deadline) {
    const auto events = node_.Events(0);
    uint32_t holder = 0;
    std::set<uint32_t> wanting;  // a burst started, not granted since
    for (const Event& e : events) {
      if (e.type == EventType::kGrant) {
        holder = e.client_id;
        wanting.erase(e.client_id);
      }
      if (e.type == EventType::kYield && e.client_id == holder) holder = 0;
      if (e.type == EventType::kBurstStart) wanting.insert(e.client_id);
      if (holder != 0 && (wanting.size() > 1 || (wanting.size() == 1 && !wanting.count(holder))))
        waiting = e;
    }
    if (!waiting) std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_TRUE(waiting) << Log();
  all_pids_.push_back(node_.arbiter().pid());
  node_.arbiter().Kill();
  ASSERT_TRUE(node_.arbiter().Start()) << Log();
  ExpectIntact(a);
  ExpectIntact(b);
  ExpectCleanNode(1, /*restarted=*/true);
}

// Yield: a function is killed right after the arbiter asked it to yield (while it drains).
// Both fit the GPU together (224 MiB quotas on 512 MiB), so the waiter is resident and waits
// for the token only: the holder is preempted at its slice end. (With the oversubscribed pair
// the waiter waits for memory, and the shim, which keeps the token while its own work is in
// flight since 3aa4916, is not preempted mid-turn.)
TEST_F(FaultTest, FunctionKilledWhileYielding) {
  const Worker a = SpawnFunction({"a", "224MiB", 11, 128, 32, 14, 8, 30, {}, {}});
  const Worker b = SpawnFunction({"b", "224MiB", 12, 128, 32, 14, 8, 30, {}, {}});
  auto preempt = node_.WaitForEvent(0, [&](const Event& e) {
    return e.type == EventType::kPreempt && (e.client_id == ClientOf(a.pid) || e.client_id == ClientOf(b.pid));
  }, kEventTimeout);
  ASSERT_TRUE(preempt) << Log();
  const bool victim_a = preempt->client_id == ClientOf(a.pid);
  Kill(victim_a ? a : b);
  ExpectIntact(victim_a ? b : a);
  ExpectCleanNode();
}

// Yield, arbiter side: the arbiter is killed right after it asked the holder to yield (the
// holder drains while nobody listens), and restarted; both functions finish intact.
TEST_F(FaultTest, ArbiterKilledWhileAHolderYields) {
  const Worker a = SpawnFunction({"a", "224MiB", 33, 128, 32, 14, 8, 30, {}, {}});
  const Worker b = SpawnFunction({"b", "224MiB", 34, 128, 32, 14, 8, 30, {}, {}});
  auto preempt = node_.WaitForEvent(0, [&](const Event& e) {
    return e.type == EventType::kPreempt && (e.client_id == ClientOf(a.pid) || e.client_id == ClientOf(b.pid));
  }, kEventTimeout);
  ASSERT_TRUE(preempt) << Log();
  ASSERT_TRUE(KillAndRestartArbiter()) << Log();
  ExpectIntact(a);
  ExpectIntact(b);
  ExpectCleanNode(1, /*restarted=*/true);
}

// Registration, client side: one raw client connects and never sends its request, another
// sends it and never reads the reply; meanwhile a function registers and runs. Then both are
// killed.
TEST_F(FaultTest, ClientsStallingMidHandshake) {
  const std::string sock = node_.arbiter().socket();
  const pid_t stall = node_.Track(arbiter::testing::Spawn({RAW_CLIENT_BIN, "connect", "--socket", sock},
                                              node_.dir() / "stall.out", ""));
  const pid_t mute = node_.Track(arbiter::testing::Spawn({RAW_CLIENT_BIN, "no-reply", "--socket", sock},
                                             node_.dir() / "mute.out", ""));
  all_pids_.insert(all_pids_.end(), {stall, mute});
  ASSERT_TRUE(arbiter::testing::WaitForFile(node_.dir() / "stall.out", seconds(10)));
  const Worker a = SpawnPairMember("a", 13, 4);
  ExpectIntact(a);
  ::kill(stall, SIGKILL);
  ::kill(mute, SIGKILL);
  (void)WaitFor(stall, seconds(10));
  (void)WaitFor(mute, seconds(10));
  ExpectCleanNode();
}

// Registration, arbiter side: the arbiter is killed while four functions register, and
// restarted; all of them finish with their data.
TEST_F(FaultTest, ArbiterKilledWhileClientsRegister) {
  std::vector<Worker> ws;
  for (int i = 0; i < 4; ++i) {
    WorkerSpec spec;
    spec.name = "r" + std::to_string(i);
    spec.quota = "160MiB";
    spec.seed = 20 + static_cast<uint64_t>(i);
    spec.big_mib = 64;
    spec.turns = 6;
    ws.push_back(node_.Spawn(spec));
    all_pids_.push_back(ws.back().pid);
  }
  ASSERT_TRUE(node_.WaitForEvent(0, [](const Event& e) { return e.type == EventType::kRegister; },
                                 kEventTimeout)) << Log();
  all_pids_.push_back(node_.arbiter().pid());
  node_.arbiter().Kill();
  ASSERT_TRUE(node_.arbiter().Start()) << Log();
  for (const Worker& w : ws) ExpectIntact(w);
  ExpectCleanNode(1, /*restarted=*/true);
}

#ifdef ROGUE_FUNCTION_BIN
// A CUDA function (tests/arbiter's arbiter_cuda_function, not preloaded) that ignores
// preemption and keeps submitting 2 ms kernels, so the arbiter must checkpoint it.
// The rogue ignores preemption, but its service thread still releases the token once its drain
// (`drain_ms` of sleep) ends: the drain must outlast the arbiter's grace, or the rogue yields in
// time and is never checkpointed.
pid_t SpawnRogue(FaultNode& node, int drain_ms = 2000) {
  return node.Track(arbiter::testing::Spawn(
      {ROGUE_FUNCTION_BIN, "--socket", node.arbiter().socket(), "--name", "rogue", "--rogue", "1",
       "--drain-ms", std::to_string(drain_ms), "--iterations", "100000", "--kernel-us", "2000"},
      node.dir() / "rogue.out", node.dir() / "rogue.err", node.SimcudaEnv()));
}

// A small preloaded function beside the rogue.
Worker SpawnPolite(FaultNode& node, const std::string& quota, int big_mib, int budget_mib,
                   int turns) {
  WorkerSpec spec;
  spec.name = "polite";
  spec.quota = quota;
  spec.big_mib = big_mib;
  spec.budget_mib = budget_mib;
  spec.turns = turns;
  spec.ops = 4;
  return node.Spawn(spec);
}

// Waits until the arbiter of `node` has checkpointed `rogue` (enforcement). The polite function
// may be checkpointed too if a kernel of its outlasts the grace on a loaded machine; it is
// restored and carries on.
bool RogueCheckpointed(FaultNode& node, pid_t rogue) {
  return node.WaitForEvent(0, [&](const Event& e) {
    return e.type == EventType::kCheckpoint && e.args[0] == 0 &&
           node.ClientPid(0, e.client_id) == rogue;
  }, kEventTimeout).has_value();
}

// The polite function finishes intact; then the arbiter stops with no reservation and simcuda
// holds no device memory. Returns the arbiter's summary.
nlohmann::json ExpectPoliteIntactAndNodeClean(FaultNode& node, const Worker& polite) {
  int code = 0;
  const nlohmann::json r = node.Finish(polite, seconds(180) * TimeScale(), &code);
  EXPECT_EQ(code, 0) << node.Describe(polite) << ReadFile(node.arbiter().log());
  EXPECT_TRUE(r.is_object() && r["errors"] == 0) << r.dump();
  const nlohmann::json summary = node.arbiter().Stop();
  EXPECT_TRUE(summary.is_object());
  if (!summary.is_object()) return summary;
  EXPECT_EQ(summary["gpus"][0]["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
  const auto used = node.DeviceUsed();
  EXPECT_EQ(used, std::optional<uint64_t>(0)) << "device memory still accounted to someone";
  return summary;
}
#endif

// Yield refused: a holder that never yields is checkpointed by the arbiter after the grace
// (enforcement), and killed while checkpointed; the other function carries on.
TEST(FaultEnforcement, CheckpointedFunctionKilled) {
#ifndef ROGUE_FUNCTION_BIN
  GTEST_SKIP() << "arbiter_cuda_function not built";
#else
  FaultNode node("1x512MiB", "0", {"--policy", "fifo", "--slice", "5ms", "--preempt-grace", std::to_string(50 * TimeScale()) + "ms"});
  ASSERT_TRUE(node.arbiter().Start());
  const pid_t rogue = SpawnRogue(node);
  const Worker w = SpawnPolite(node, "128MiB", 8, 8, 8);
  ASSERT_TRUE(RogueCheckpointed(node, rogue)) << ReadFile(node.arbiter().log());
  ::kill(rogue, SIGKILL);
  (void)WaitFor(rogue, seconds(30));
  const nlohmann::json summary = ExpectPoliteIntactAndNodeClean(node, w);
  EXPECT_GE(summary.value("enforcements", 0), 1) << summary.dump();
#endif
}

#ifdef ROGUE_FUNCTION_BIN
enum class ArbiterEnd { kKilledAndRestarted, kStopped };

// The arbiter ends (`how`) while it holds a rogue function checkpointed (its memory moved to
// host, the process locked). The function must not stay frozen: a stopped arbiter restores it
// before it exits; after a kill the new arbiter restores it when it registers again.
void ExpectCheckpointedRogueThawed(ArbiterEnd how) {
  FaultNode node("1x512MiB", "0", {"--policy", "fifo", "--slice", "5ms", "--preempt-grace", std::to_string(50 * TimeScale()) + "ms"});
  ASSERT_TRUE(node.arbiter().Start());
  const pid_t rogue = SpawnRogue(node);
  const Worker w = SpawnPolite(node, "128MiB", 8, 8, 8);
  ASSERT_TRUE(RogueCheckpointed(node, rogue)) << ReadFile(node.arbiter().log());
  if (how == ArbiterEnd::kStopped) {
    (void)node.arbiter().Stop();
  } else {
    node.arbiter().Kill();
    std::this_thread::sleep_for(milliseconds(200));
    ASSERT_TRUE(node.arbiter().Start()) << ReadFile(node.arbiter().log());
  }
  std::optional<int> state;  // the driver's view of the rogue, until it runs again (30 s)
  for (int i = 0; i < 150 && (state = node.ProcessState(rogue)) != kProcessRunning; ++i)
    std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(::kill(rogue, 0), 0) << "the checkpointed function died";
  EXPECT_EQ(state, std::optional<int>(kProcessRunning))
      << "the function checkpointed by the arbiter is still frozen\n"
      << ReadFile(node.arbiter().log());
  ::kill(rogue, SIGKILL);
  (void)WaitFor(rogue, seconds(30));
  if (how == ArbiterEnd::kKilledAndRestarted) (void)ExpectPoliteIntactAndNodeClean(node, w);
  if (how == ArbiterEnd::kStopped) ::kill(w.pid, SIGKILL);  // no arbiter left to serve it
  (void)WaitFor(w.pid, seconds(30));
}
#endif

// Checkpoint, arbiter side: the arbiter is killed while a function is checkpointed, and
// restarted (it died before it could restore it).
TEST(FaultEnforcement, ArbiterKilledWhileAFunctionIsCheckpointed) {
#ifndef ROGUE_FUNCTION_BIN
  GTEST_SKIP() << "arbiter_cuda_function not built";
#else
  ExpectCheckpointedRogueThawed(ArbiterEnd::kKilledAndRestarted);
#endif
}

// The arbiter stops cleanly (SIGTERM) while a function is checkpointed.
TEST(FaultEnforcement, ArbiterStoppedWhileAFunctionIsCheckpointed) {
#ifndef ROGUE_FUNCTION_BIN
  GTEST_SKIP() << "arbiter_cuda_function not built";
#else
  ExpectCheckpointedRogueThawed(ArbiterEnd::kStopped);
#endif
}

// Reproducer (inbox: "stale clock after enforcement"): the arbiter's loop validated every
// channel with the time taken before a blocking checkpoint, so when a checkpoint took more
// than 1 s (here 8 MiB over a 5 MB/s simulated link) every other client's heartbeat "lay in
// the future" and all of them were disconnected as malformed.
TEST(FaultEnforcement, SlowCheckpointKeepsOtherClientsConnected) {
#ifndef ROGUE_FUNCTION_BIN
  GTEST_SKIP() << "arbiter_cuda_function not built";
#else
  // A 2 s grace: the lock (which waits for in-flight work, here copies at 5 MB/s) succeeds.
  FaultNode node("1x512MiB", "0.005", {"--policy", "fifo", "--slice", "5ms", "--preempt-grace", "2s"});
  ASSERT_TRUE(node.arbiter().Start());
  const pid_t rogue = SpawnRogue(node, 10'000);  // its drain far beyond the 2 s grace
  // The polite function starts once the rogue holds the GPU: the rogue's start-up copies at
  // 5 MB/s can outlast the polite function's whole run, and then nobody ever waits for it.
  ASSERT_TRUE(node.WaitForEvent(0, [&](const Event& e) {
    return e.type == EventType::kGrant && node.ClientPid(0, e.client_id) == rogue;
  }, kEventTimeout)) << ReadFile(node.arbiter().log());
  const Worker w = SpawnPolite(node, "64MiB", 4, 1, 3);
  auto cp = node.WaitForEvent(0, [](const Event& e) {
    return e.type == EventType::kCheckpoint && e.args[0] == 0;
  }, kEventTimeout);
  ASSERT_TRUE(cp) << ReadFile(node.arbiter().log());
  // The loop iteration after the checkpoint is where the other client was judged; then the
  // rogue goes (its restores would only slow the test down).
  std::this_thread::sleep_for(milliseconds(300));
  ::kill(rogue, SIGKILL);
  (void)WaitFor(rogue, seconds(30));
  int code = 0;
  const nlohmann::json r = node.Finish(w, seconds(180) * TimeScale(), &code);
  EXPECT_EQ(code, 0) << node.Describe(w) << ReadFile(node.arbiter().log());
  EXPECT_TRUE(r.is_object() && r["errors"] == 0) << r.dump();
  const nlohmann::json summary = node.arbiter().Stop();
  ASSERT_TRUE(summary.is_object());
  EXPECT_GE(summary["enforcements"].get<int>(), 1) << summary.dump();
  EXPECT_EQ(summary["malformed_channels"], 0) << summary.dump() << ReadFile(node.arbiter().log());
  EXPECT_EQ(summary["re_registrations"], 0) << summary.dump();
  EXPECT_EQ(summary["gpus"][0]["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
#endif
}

// Reproducer (inbox: "cuMemFree releases memory a queued kernel still writes"): a legal program
// frees an allocation right after queueing a kernel that writes it. The real driver's cuMemFree
// (and simcuda's) waits for that work; the shim's Free unmapped the granules at once, so the
// kernel wrote unmapped memory (SIGSEGV). Same program without the shim: fine (checked first).
TEST(ShimRepro, FreeWhileAKernelStillWritesTheMemory) {
  FaultNode node("1x512MiB", "0", {});
  const std::string out = node.dir() / "plain.out";
  pid_t pid = arbiter::testing::Spawn({WORKER_BIN, "free-in-flight"}, out, "", node.SimcudaEnv());
  ASSERT_EQ(ExitCode(WaitFor(pid, seconds(60) * TimeScale())), 0) << ReadFile(out);
  std::vector<std::string> env = node.SimcudaEnv();
  env.push_back(std::string("LD_PRELOAD=") + PRELOAD_LIB);
  env.push_back("GSHARE_VGPU_MEMORY=256MiB");
  env.push_back("GSHARE_LOG_FILE=" + (node.dir() / "shim.log"));
  const std::string shim_out = node.dir() / "shim.out";
  pid = arbiter::testing::Spawn({WORKER_BIN, "free-in-flight"}, shim_out, "", env);
  EXPECT_EQ(ExitCode(WaitFor(pid, seconds(60) * TimeScale())), 0)
      << "(-12 = SIGSEGV)\n" << ReadFile(shim_out) << ReadFile(node.dir() / "shim.log");
  EXPECT_NE(ReadFile(shim_out).find("ok\n"), std::string::npos);
}

// A raw client the arbiter disconnects alive is no CUDA process: the arbiter's driver (simcuda,
// which FaultNode's arbiter loads: no gpu_memory given) knows no CUDA state of it, so the
// reservation it would keep for a live process (an orphan) is released at once, `n` times.
void ExpectOrphansReleasedAsNoCudaProcess(const nlohmann::json& summary, int n) {
  EXPECT_EQ(summary["orphans_created"].get<int>(), n) << summary.dump();
  EXPECT_EQ(summary["orphans_released_no_device"].get<int>(), n) << summary.dump();
}

// A client that stops reading its channel: it registered (resident, as the arbiter sees it)
// and never acknowledges the swap-out ordered to make room for a function that needs the GPU.
// Disconnected alive (order timeout), it holds no device memory (no CUDA process, and the
// arbiter's driver can tell), so its room goes to the function at once; the same client as a
// CUDA process keeps its room until it exits (LiveDisconnectedCudaProcessKeeps... below).
TEST_F(FaultTest, ClientThatStopsReadingItsChannel) {
  const pid_t deaf = node_.Track(arbiter::testing::Spawn(
      {RAW_CLIENT_BIN, "deaf", "--socket", node_.arbiter().socket(), "--quota-mib", "320"},
      node_.dir() / "deaf.out", ""));
  all_pids_.push_back(deaf);
  ASSERT_TRUE(node_.WaitForEvent(0, [](const Event& e) { return e.type == EventType::kRegister; },
                                 kEventTimeout));
  const Worker a = SpawnPairMember("a", 14, 4);
  ExpectIntact(a, seconds(60) * TimeScale());
  ::kill(deaf, SIGKILL);
  (void)WaitFor(deaf, seconds(10));
  ExpectCleanNode();
  EXPECT_EQ(summary_["order_timeouts"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["client_deaths"].get<int>(), 0) << summary_.dump();
  ExpectOrphansReleasedAsNoCudaProcess(summary_, 1);
}

// A client that takes the token and never gives it back nor answers (and is no CUDA process,
// so it cannot be checkpointed): the other function must still get the GPU.
TEST_F(FaultTest, ClientThatHoldsTheTokenAndStopsReading) {
  const pid_t hold = node_.Track(arbiter::testing::Spawn(
      {RAW_CLIENT_BIN, "hold", "--socket", node_.arbiter().socket(), "--quota-mib", "64"},
      node_.dir() / "hold.out", ""));
  all_pids_.push_back(hold);
  ASSERT_TRUE(arbiter::testing::WaitForFile(node_.dir() / "hold.out", seconds(10)));
  ASSERT_TRUE(node_.WaitForEvent(0, [](const Event& e) { return e.type == EventType::kGrant; },
                                 kEventTimeout)) << Log();
  const Worker a = SpawnPairMember("a", 15, 4);
  ExpectIntact(a, seconds(60) * TimeScale());
  ::kill(hold, SIGKILL);
  (void)WaitFor(hold, seconds(10));
  ExpectCleanNode();
  EXPECT_EQ(summary_["unenforceable"].get<int>(), 1) << summary_.dump();
  ExpectOrphansReleasedAsNoCudaProcess(summary_, 1);  // disconnected alive, no CUDA process
}

// A client that floods its channel with requests for 3 s, then writes a malformed value: the
// other function runs meanwhile, and the flooder is disconnected.
TEST_F(FaultTest, ClientFloodingRequests) {
  const pid_t flood = node_.Track(arbiter::testing::Spawn(
      {RAW_CLIENT_BIN, "flood", "--socket", node_.arbiter().socket(), "--quota-mib", "64",
       "--seconds", "3"},
      node_.dir() / "flood.out", ""));
  all_pids_.push_back(flood);
  const Worker a = SpawnPairMember("a", 16, 6);
  ExpectIntact(a);
  EXPECT_EQ(ExitCode(WaitFor(flood, seconds(60) * TimeScale())), 0) << ReadFile(node_.dir() / "flood.out");
  const std::string out = ReadFile(node_.dir() / "flood.out");
  EXPECT_NE(out.find("flooded"), std::string::npos) << out;
  EXPECT_NE(out.find("closed"), std::string::npos) << "the flooder was not disconnected: " << out;
  ExpectCleanNode();
  EXPECT_GE(summary_["malformed_channels"].get<int>(), 1) << summary_.dump();
  ExpectOrphansReleasedAsNoCudaProcess(summary_, summary_["malformed_channels"].get<int>());
}

// Starts fault_raw_client in `mode` against the node's arbiter (64 MiB quota) with `extra`
// arguments, its output in <dir>/<out>; the result exits by itself and is waited for.
pid_t SpawnRawClient(FaultNode& node, std::vector<pid_t>& pids, const std::string& mode,
                     std::vector<std::string> extra, const std::string& out) {
  std::vector<std::string> argv = {RAW_CLIENT_BIN, mode, "--socket", node.arbiter().socket(),
                                   "--quota-mib", "64"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const pid_t pid = node.Track(arbiter::testing::Spawn(argv, node.dir() / out, ""));
  pids.push_back(pid);
  return pid;
}

// A client caught inside a write of its channel (descheduled there, as on a loaded machine) is
// read again later, not disconnected as malformed; one that stays there for longer than the
// arbiter's bound (2 s) is. The honest function runs on meanwhile.
TEST_F(FaultTest, SlowChannelWriterIsNotMalformedButAStuckOneIs) {
  const pid_t slow = SpawnRawClient(node_, all_pids_, "stall-write", {"--stall-ms", "600"}, "slow.out");
  const Worker a = SpawnPairMember("a", 17, 4);
  EXPECT_EQ(ExitCode(WaitFor(slow, seconds(60) * TimeScale())), 0) << ReadFile(node_.dir() / "slow.out");
  std::string out = ReadFile(node_.dir() / "slow.out");
  EXPECT_NE(out.find("completed"), std::string::npos) << out;
  EXPECT_NE(out.find("still connected"), std::string::npos) << "a slow writer was disconnected: " << out << Log();

  const pid_t stuck = SpawnRawClient(node_, all_pids_, "stall-write", {"--stall-ms", "0"}, "stuck.out");
  EXPECT_EQ(ExitCode(WaitFor(stuck, seconds(60) * TimeScale())), 0) << ReadFile(node_.dir() / "stuck.out");
  out = ReadFile(node_.dir() / "stuck.out");
  EXPECT_NE(out.find("closed"), std::string::npos) << out;
  EXPECT_EQ(out.find("completed"), std::string::npos) << out;
  ExpectIntact(a);
  ExpectCleanNode();
  EXPECT_EQ(summary_["malformed_channels"].get<int>(), 1) << summary_.dump();
  ExpectOrphansReleasedAsNoCudaProcess(summary_, 1);  // the stuck writer, disconnected alive
}

// A client that writes its doorbell eventfd in a tight loop (ignoring whether the arbiter
// armed it) while two honest functions run: its doorbell is muted (doorbell_rate), both
// functions keep being granted the GPU during the flood and finish intact, and after
// doorbell_flood_disconnect of flooding the flooder is disconnected (unregister reason 5).
class FaultFlood : public FaultTest {
 protected:
  FaultFlood()
      : FaultTest({"--policy", "fifo", "--slice", "5ms", "--preempt-grace", "10s",
                   "--doorbell-rate", "200", "--doorbell-flood-disconnect", "3s"}) {}

  // Two of these fit the GPU together: no swapping, only grants.
  Worker SpawnHonest(const std::string& name, uint64_t seed) {
    return SpawnFunction({name, "128MiB", seed, 32, 16, 40, 8, 10, {}, {}});
  }
};

TEST_F(FaultFlood, DoorbellFlooderIsMutedThenDisconnectedWhileOthersKeepRunning) {
  const Worker a = SpawnHonest("a", 31);
  const Worker b = SpawnHonest("b", 32);
  const auto ready_by = std::chrono::steady_clock::now() + kEventTimeout;
  while ((!Ready(a) || !Ready(b)) && std::chrono::steady_clock::now() < ready_by)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(Ready(a) && Ready(b)) << node_.Describe(a) << node_.Describe(b);
  const pid_t flood = node_.Track(arbiter::testing::Spawn(
      {RAW_CLIENT_BIN, "flood-doorbell", "--socket", node_.arbiter().socket(), "--quota-mib",
       "64", "--seconds", "60"},
      node_.dir() / "flood.out", ""));
  all_pids_.push_back(flood);
  EXPECT_EQ(ExitCode(WaitFor(flood, seconds(90) * TimeScale())), 0) << ReadFile(node_.dir() / "flood.out");
  const std::string out = ReadFile(node_.dir() / "flood.out");
  EXPECT_NE(out.find("flooded"), std::string::npos) << out;
  EXPECT_NE(out.find("closed"), std::string::npos) << "the flooder was not disconnected: " << out;

  // The flood window: from the flooder's registration to its removal (reason 5, flooding).
  const uint32_t flooder = ClientOf(flood);
  ASSERT_NE(flooder, 0u) << Log();
  uint64_t from = 0;
  uint64_t to = 0;
  for (const Event& e : node_.Events(0)) {
    if (e.client_id != flooder) continue;
    if (e.type == EventType::kRegister) from = e.index;
    if (e.type == EventType::kUnregister) {
      to = e.index;
      EXPECT_EQ(e.args[0], 5u) << "unregister reason";
    }
  }
  ASSERT_LT(from, to) << Log();
  // Both honest functions were granted the GPU while the flood lasted.
  for (const Worker* w : {&a, &b}) {
    const uint32_t id = ClientOf(w->pid);
    int grants = 0;
    for (const Event& e : node_.Events(0))
      grants += e.type == EventType::kGrant && e.client_id == id && e.index > from && e.index < to;
    EXPECT_GE(grants, 1) << w->name << " was not served during the flood\n" << Log();
  }
  ExpectIntact(a);
  ExpectIntact(b);
  ExpectCleanNode();
  EXPECT_GE(summary_["doorbell_mutes"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["flood_disconnects"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["malformed_channels"].get<int>(), 0) << summary_.dump();
  ExpectOrphansReleasedAsNoCudaProcess(summary_, 1);  // the flooder, disconnected alive
}

// Device OOM during swap-in: while function b (256 MiB of data) is swapped out and a (about
// 90 MiB) is resident, a process outside gshare takes 360 MiB of device memory the arbiter does
// not know about; b's next swap-in (after a is swapped out) finds too little device memory and
// fails. When that memory comes back, both functions finish with their data.
TEST_F(FaultTest, DeviceOutOfMemoryDuringSwapIn) {
  WorkerSpec small;
  small.name = "a";
  small.quota = "320MiB";
  small.seed = 17;
  small.big_mib = 64;
  small.budget_mib = 16;
  small.turns = 16;
  small.idle_ms = 30;
  WorkerSpec big = small;
  big.name = "b";
  big.seed = 18;
  big.big_mib = 256;
  const Worker a = node_.Spawn(small);
  const Worker b = node_.Spawn(big);
  all_pids_.insert(all_pids_.end(), {a.pid, b.pid});
  auto out = node_.WaitForEvent(0, [&](const Event& e) {
    return e.type == EventType::kSwapOutEnd && e.args[1] > (200u << 20);
  }, kEventTimeout);
  ASSERT_TRUE(out) << Log();
  const std::string release = node_.dir() / "release-hog";
  const pid_t hog = node_.Track(arbiter::testing::Spawn({WORKER_BIN, "hog", "--mib", "360", "--until", release},
                                            node_.dir() / "hog.out", "", node_.SimcudaEnv()));
  all_pids_.push_back(hog);
  const auto end = std::chrono::steady_clock::now() + seconds(60) * TimeScale();
  while (Log().find("swap-in onto GPU 0 failed") == std::string::npos &&
         std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(milliseconds(20));
  std::ofstream(release).put('1');
  EXPECT_EQ(ExitCode(WaitFor(hog, seconds(30) * TimeScale())), 0) << ReadFile(node_.dir() / "hog.out");
  EXPECT_NE(ReadFile(node_.dir() / "hog.out").find("held"), std::string::npos);
  EXPECT_NE(Log().find("swap-in onto GPU 0 failed"), std::string::npos)
      << "the fault was not reached: no swap-in failed\n" << Log();
  ExpectIntact(a, seconds(90) * TimeScale());
  ExpectIntact(b, seconds(90) * TimeScale());
  ExpectCleanNode();
}

// Host memory pressure: a function's address space is limited (RLIMIT_AS, set from outside with
// prlimit) once it initialised and before it allocates (fault_worker --wait-before-alloc), to
// its size then plus 448 MiB: room for its allocations (simcuda's device memory is host memory
// of the process: about 256 MiB for the big block, up to 100 MiB more for the rest and the
// per-turn compares), none for pinned staging of its footprint on top (about 1.25 x 210 MiB).
// The shim pins staging ahead of time when it gives the token back, and otherwise at the
// swap-out; both fail, so the swap-out fails and the function stays resident. (Limiting it
// later would race with the staging pinned ahead of time, which is then no longer affected.)
// After the limit is lifted, both finish with their data.
TEST_F(FaultTest, HostMemoryPressureFailsSwapOut) {
  const std::string go = node_.dir() / "a-may-allocate";
  const Worker a = SpawnFunction(
      {"a", "320MiB", 19, 192, 32, 16, 8, 30, {}, {"--wait-before-alloc", go}});
  ASSERT_TRUE(arbiter::testing::WaitForFile(a.out, seconds(30)));
  const auto end = std::chrono::steady_clock::now() + seconds(60);
  while (!HasLine(a.out, "initialized") && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(milliseconds(2));
  ASSERT_TRUE(HasLine(a.out, "initialized")) << node_.Describe(a);
  uint64_t vm_kib = 0;
  {
    std::ifstream status("/proc/" + std::to_string(a.pid) + "/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoull(line.substr(7));
  }
  ASSERT_GT(vm_kib, 0u);
  rlimit lim{(vm_kib << 10) + (448u << 20), RLIM_INFINITY};
  ASSERT_EQ(::prlimit(a.pid, RLIMIT_AS, &lim, nullptr), 0);
  std::ofstream(go).put('1');
  while (!Ready(a) && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(milliseconds(2));
  ASSERT_TRUE(Ready(a)) << node_.Describe(a);
  const Worker b = SpawnPairMember("b", 20, 16);
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (Log().find("swap-out failed") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_NE(Log().find("swap-out failed"), std::string::npos)
      << "the fault was not reached\n" << Log() << node_.Describe(a);
  rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  ASSERT_EQ(::prlimit(a.pid, RLIMIT_AS, &unlimited, nullptr), 0);
  ExpectIntact(a);
  ExpectIntact(b);
  ExpectCleanNode();
}


// ---- Orphan reservations (docs/arbiter.md, "Orphans"). A raw client made a CUDA process that
// holds its quota of device memory (--cuda 1: simcuda knows it) writes a malformed channel and is
// disconnected, alive: its reservation stays (an orphan) until it exits or registers again.

// Polls `path` until it has `text` (safety net kEventTimeout); whether it has.
bool WaitForLine(const std::string& path, const std::string& text) {
  const auto end = std::chrono::steady_clock::now() + kEventTimeout;
  while (!HasLine(path, text) && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(milliseconds(5));
  return HasLine(path, text);
}

// Whether the event ring shows a swap-in ordered for `client`.
bool SwapInOrdered(FaultNode& node, uint32_t client) {
  for (const Event& e : node.Events(0))
    if (e.type == EventType::kSwapInBegin && e.client_id == client) return true;
  return false;
}

class FaultOrphanTest : public FaultTest {
 protected:
  // Starts `fault_raw_client malformed` as a CUDA process holding 320 MiB of the 512 MiB GPU and
  // waits until the arbiter disconnected it; its output in <dir>/raw.out. -1 on failure.
  pid_t SpawnDisconnectedCudaClient(std::vector<std::string> extra = {}) {
    const pid_t pid = SpawnCudaRawClient("malformed", std::move(extra));
    return WaitForLine(raw_out_, "closed\n") ? pid : -1;
  }
  // Starts `fault_raw_client <mode>` as such a CUDA process (320 MiB); does not wait.
  pid_t SpawnCudaRawClient(const std::string& mode, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {RAW_CLIENT_BIN, mode, "--socket", node_.arbiter().socket(),
                                     "--quota-mib", "320", "--cuda", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const pid_t pid =
        node_.Track(arbiter::testing::Spawn(argv, raw_out_, "", node_.SimcudaEnv()));
    all_pids_.push_back(pid);
    return pid;
  }
  // Waits until function `a` asks for the GPU (its burst start in the event ring).
  bool AsksForTheGpu(const Worker& a) {
    return node_.WaitForEvent(0, [&](const Event& e) {
      return e.type == EventType::kBurstStart && e.client_id == ClientOf(a.pid);
    }, kEventTimeout).has_value();
  }
  // Ends the raw client and checks that `a` then finishes intact on a clean node.
  void KillRawAndFinish(pid_t raw, const Worker& a) {
    ::kill(raw, SIGKILL);
    (void)WaitFor(raw, seconds(10));
    ExpectIntact(a, seconds(60) * TimeScale());
    ExpectCleanNode();
  }
  // Polls the arbiter's log until it has `text` (safety net kEventTimeout); whether it has.
  bool WaitForLog(const std::string& text) {
    const auto end = std::chrono::steady_clock::now() + kEventTimeout;
    while (Log().find(text) == std::string::npos && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(milliseconds(20));
    return Log().find(text) != std::string::npos;
  }
  const std::string raw_out_ = node_.dir() / "raw.out";
};

// The disconnected process still holds 320 MiB on the device, and the arbiter keeps them
// reserved: a 320 MiB function waits (no swap-in is ordered for it) until that process exits,
// then runs with its data intact; the reservation never exceeded the GPU.
TEST_F(FaultOrphanTest, LiveDisconnectedCudaProcessKeepsItsReservationUntilItExits) {
  const pid_t raw = SpawnDisconnectedCudaClient();
  ASSERT_GT(raw, 0) << ReadFile(raw_out_) << Log();
  EXPECT_NE(Log().find("stay reserved as orphan"), std::string::npos) << Log();
  const auto used = node_.DeviceUsed();
  ASSERT_TRUE(used.has_value());
  EXPECT_GE(*used, 320u << 20) << "the raw client does not hold its device memory";

  const Worker a = SpawnPairMember("a", 21, 4);
  // Once a asks for the GPU, its swap-in would be ordered in the same loop step if there were
  // room. Half a second later there is still none.
  ASSERT_TRUE(AsksForTheGpu(a)) << Log();
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_FALSE(SwapInOrdered(node_, ClientOf(a.pid)))
      << "a was swapped in beside memory a live process still holds\n" << Log();

  KillRawAndFinish(raw, a);
  EXPECT_EQ(summary_["malformed_channels"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_created"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_released_exited"].get<int>(), 1) << summary_.dump();
}

// The disconnected process registers again, resident (as a shim on fail-open does): its new
// reservation replaces the orphan, so the function waiting for room is not swapped in beside it
// and nothing overshoots (ExpectCleanNode: overshoot_events 0, peak <= usable).
TEST_F(FaultOrphanTest, DisconnectedCudaProcessRegisteringAgainReplacesItsOrphan) {
  const std::string again = node_.dir() / "register-again";
  const pid_t raw = SpawnDisconnectedCudaClient({"--again", again});
  ASSERT_GT(raw, 0) << ReadFile(raw_out_) << Log();
  const Worker a = SpawnPairMember("a", 22, 4);
  ASSERT_TRUE(AsksForTheGpu(a)) << Log();
  std::ofstream(again).put('1');
  ASSERT_TRUE(WaitForLine(raw_out_, "registered again")) << ReadFile(raw_out_) << Log();
  EXPECT_NE(Log().find("the process registered again (its new reservation replaces it)"),
            std::string::npos) << Log();
  EXPECT_FALSE(SwapInOrdered(node_, ClientOf(a.pid))) << Log();

  KillRawAndFinish(raw, a);
  EXPECT_EQ(summary_["orphans_created"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_released_reregistered"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_released_exited"].get<int>(), 0) << summary_.dump();
}

// A CUDA process stopped (SIGSTOP) while resident misses the swap-out ordered to make room for
// a function: disconnected for the order timeout (10 s + its quota at 128 MiB/s), it keeps its
// reservation — and the arbiter does not ask the driver about it (simcuda's state query is
// answered by the process itself, which is stopped: the loop would block forever). The function
// waits for the room until the process is killed, then finishes intact.
TEST_F(FaultOrphanTest, StoppedCudaProcessThatMissesASwapOrderKeepsItsReservation) {
  const pid_t raw = SpawnCudaRawClient("deaf");
  ASSERT_TRUE(WaitForLine(raw_out_, "registered")) << ReadFile(raw_out_) << Log();
  ASSERT_EQ(::kill(raw, SIGSTOP), 0);
  const Worker a = SpawnPairMember("a", 23, 4);
  ASSERT_TRUE(AsksForTheGpu(a)) << Log();
  ASSERT_TRUE(WaitForLog("(stopped) and holds its device memory")) << Log();
  EXPECT_FALSE(SwapInOrdered(node_, ClientOf(a.pid)))
      << "a was swapped in beside memory a stopped process still holds\n" << Log();

  KillRawAndFinish(raw, a);
  EXPECT_EQ(summary_["order_timeouts"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_created"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_released_exited"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_released_no_device"].get<int>(), 0) << summary_.dump();
}

// The same with a real function under the shim (the case of the overshoots seen under TSan): a
// is stopped while idle and resident, misses the swap-out ordered for b and is disconnected
// (order timeout) — its reservation stays as an orphan. Resumed, its shim finds the arbiter
// gone, runs on fail-open and registers again resident: the new reservation replaces the orphan
// (no overshoot), after which a is swapped out the normal way for b. Both finish intact.
TEST_F(FaultOrphanTest, FunctionStoppedPastASwapOrderRegistersAgainAndReplacesItsOrphan) {
  const Worker a = SpawnFunction({"a", "320MiB", 24, 192, 32, 3, 8, 3000, {}, {}});
  ASSERT_TRUE(WaitForLine(a.out, "turn=0 ")) << node_.Describe(a) << Log();
  // Idle for 3 s now: stopped once its token is back (its last grant has its yield).
  const auto holding = [&] {
    uint64_t grant = 0, yield = 0;
    for (const Event& e : node_.Events(0)) {
      if (e.client_id != ClientOf(a.pid)) continue;
      if (e.type == EventType::kGrant) grant = e.index + 1;
      if (e.type == EventType::kYield) yield = e.index + 1;
    }
    return grant > yield;
  };
  const auto end = std::chrono::steady_clock::now() + kEventTimeout;
  while (holding() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_FALSE(holding()) << Log();
  ASSERT_EQ(::kill(a.pid, SIGSTOP), 0);
  const Worker b = SpawnPairMember("b", 25, 4);
  const bool orphaned = WaitForLog("(stopped) and holds its device memory");
  EXPECT_FALSE(SwapInOrdered(node_, ClientOf(b.pid))) << Log();
  ASSERT_EQ(::kill(a.pid, SIGCONT), 0);
  ASSERT_TRUE(orphaned) << "a was not disconnected as a stopped orphan\n" << Log();
  EXPECT_TRUE(WaitForLog("the process registered again")) << Log() << node_.Describe(a);
  ExpectIntact(a);
  ExpectIntact(b);
  ExpectCleanNode();
  EXPECT_EQ(summary_["order_timeouts"].get<int>(), 1) << summary_.dump();
  EXPECT_GE(summary_["re_registrations"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_created"].get<int>(), 1) << summary_.dump();
  EXPECT_EQ(summary_["orphans_released_reregistered"].get<int>(), 1) << summary_.dump();
}

// PID reuse: the orphan's process exits while the arbiter is stopped (SIGSTOP), and a new
// process gets its pid and registers before the arbiter has seen the exit; both wake the
// arbiter in the same loop iteration. The newcomer must not inherit the orphan (its pidfd has
// signalled: released as exited, never as a re-registration). Run in a private pid namespace
// (unshare) so the pid can be chosen (ns_last_pid); skipped where that is not permitted.
TEST(FaultOrphan, ReusedPidOfAnExitedOrphanDoesNotInheritIt) {
  FaultNode node("1x512MiB", "0", {});
  const std::string script = R"(
D="$ORPHAN_DIR"
"$ARBITER" --socket "$D/ns.sock" --event-ring "$D/ns.ring" --summary "$D/ns.summary.json" \
  --log-level debug 2>"$D/ns.arbiter.log" &
ARB=$!
wait_for() { for i in $(seq 6000); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.01; done; return 1; }
wait_for "listening on" "$D/ns.arbiter.log" || exit 3
"$RAW" malformed --socket "$D/ns.sock" --quota-mib 320 --cuda 1 >"$D/ns.a.out" &
PA=$!
wait_for closed "$D/ns.a.out" || exit 4
wait_for "stay reserved as orphan" "$D/ns.arbiter.log" || exit 5
kill -STOP $ARB
kill -KILL $PA
wait $PA
echo $((PA - 1)) >/proc/sys/kernel/ns_last_pid || { kill -CONT $ARB; exit 77; }
"$RAW" register --socket "$D/ns.sock" --quota-mib 320 >"$D/ns.b.out" &
PB=$!
if [ "$PB" != "$PA" ]; then kill -CONT $ARB; exit 78; fi
sleep 0.2  # b connects and sends its request while the arbiter is stopped
kill -CONT $ARB
wait_for registered "$D/ns.b.out" || exit 6
kill -KILL $PB
wait $PB
kill -TERM $ARB
wait $ARB || exit 7
echo "pid $PA reused"
)";
  if (::access("/usr/bin/unshare", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/unshare (util-linux)";
  std::vector<std::string> argv = {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc",
                                   "--kill-child"};
  if (::geteuid() != 0) argv.insert(argv.begin() + 1, {"--user", "--map-root-user"});
  argv.insert(argv.end(), {"bash", "-c", script});
  std::vector<std::string> env = node.SimcudaEnv();
  env.insert(env.end(), {"ORPHAN_DIR=" + node.dir().path(), std::string("ARBITER=") + ARBITER_BIN,
                         std::string("RAW=") + RAW_CLIENT_BIN});
  const std::string out = node.dir() / "ns.out";
  const std::string err = node.dir() / "ns.err";
  const pid_t pid = node.Track(arbiter::testing::Spawn(argv, out, err, env));
  ASSERT_GT(pid, 0);
  const int code = ExitCode(WaitFor(pid, seconds(120) * TimeScale()));
  const std::string log = ReadFile(node.dir() / "ns.arbiter.log");
  if (code == 77 || code == 78 || (code != 0 && ReadFile(err).find("unshare failed") != std::string::npos))
    GTEST_SKIP() << "no private pid namespace with a chosen pid here (exit " << code << "): " << ReadFile(err);
  ASSERT_EQ(code, 0) << ReadFile(out) << ReadFile(err) << "\nraw a: " << ReadFile(node.dir() / "ns.a.out")
                     << "\nraw b: " << ReadFile(node.dir() / "ns.b.out") << "\n" << log;
  EXPECT_NE(ReadFile(out).find("reused"), std::string::npos) << ReadFile(out);
  const nlohmann::json summary =
      nlohmann::json::parse(ReadFile(node.dir() / "ns.summary.json"), nullptr, false);
  ASSERT_TRUE(summary.is_object()) << log;
  EXPECT_EQ(summary["registrations"].get<int>(), 2) << summary.dump();
  EXPECT_EQ(summary["orphans_created"].get<int>(), 1) << summary.dump() << log;
  EXPECT_EQ(summary["orphans_released_exited"].get<int>(), 1) << summary.dump() << log;
  EXPECT_EQ(summary["orphans_released_reregistered"].get<int>(), 0)
      << "the new process with the orphan's pid inherited it\n" << summary.dump() << log;
  const auto& gpu = summary["gpus"][0];
  EXPECT_EQ(gpu["reserved_bytes"].get<uint64_t>(), 0u) << summary.dump();
  EXPECT_EQ(gpu["overshoot_events"].get<uint64_t>(), 0u) << summary.dump();
}

}  // namespace
}  // namespace gshare::fault
