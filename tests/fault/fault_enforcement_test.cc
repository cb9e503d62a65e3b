// Fault injection, enforcement: a CUDA function that ignores preemption is checkpointed by the
// arbiter (simcuda's process checkpoint API); it is killed while checkpointed, the arbiter is
// killed or stopped while it holds it checkpointed (it must not stay frozen), and a slow
// checkpoint must not make the other clients look malformed.
#include "fault_fixture.h"

namespace gshare::fault {
namespace {

constexpr int kProcessRunning = 0;  // CU_PROCESS_STATE_RUNNING (cuda.h), FaultNode::ProcessState

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

}  // namespace
}  // namespace gshare::fault
