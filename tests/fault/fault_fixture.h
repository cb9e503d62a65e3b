// The fault-injection tests' shared fixture (fault_injection_test; the tests are split by theme
// into fault_*_test.cc): FaultTest, a node (fault_env.h) with one simulated GPU, its arbiter
// started, and the steps every fault test takes (spawn functions, wait for them to finish
// intact, kill and restart the arbiter, check that the node is clean after the fault).
// Ownership: a FaultTest owns its node (processes it spawned are killed with it).
// Thread-safety: the test's thread only.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fault_env.h"

namespace gshare::fault {

using arbiter::testing::ExitCode;
using arbiter::testing::ReadFile;
using arbiter::testing::WaitFor;
using shm::Event;
using shm::EventType;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Safety net for waiting on an event or a line (scaled in sanitizer builds).
inline const auto kEventTimeout = seconds(60) * TimeScale();

// Whether the file at `path` contains `text`.
inline bool HasLine(const std::string& path, const std::string& text) {
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
    EXPECT_EQ(summary.value("invariant_violations", uint64_t{0}), 0u) << summary.dump() << Log();
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
// `grace` later (its end event not yet recorded); returns the begin event (fault_kill_test.cc).
std::optional<shm::Event> MidSwap(FaultNode& node, shm::EventType begin, shm::EventType end,
                                  const std::function<bool(uint32_t client)>& eligible,
                                  std::chrono::milliseconds grace);

}  // namespace gshare::fault
