// Fault injection, orphan reservations (docs/arbiter.md, "Orphans"): a live process the
// arbiter disconnects keeps its reservation until it exits, registers again or the driver knows
// no CUDA state of it; a stopped one that misses a swap order keeps it too; a reused pid of an
// exited orphan does not inherit it. The raw client is made a CUDA process that holds its quota
// of device memory (--cuda 1: simcuda knows it).
#include <fstream>

#include "fault_fixture.h"

namespace gshare::fault {
namespace {

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
