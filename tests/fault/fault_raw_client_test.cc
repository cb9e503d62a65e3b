// Fault injection, misbehaving raw clients (fault_raw_client, built on shm/ without the shim):
// a client that stops reading its channel, one that holds the token and stops reading, one that
// floods its channel or its doorbell, and a slow versus a stuck channel writer. The arbiter
// disconnects them and the functions beside them finish intact.
#include "fault_fixture.h"

namespace gshare::fault {
namespace {

// A raw client the arbiter disconnects alive is no CUDA process: the arbiter's driver (simcuda,
// which FaultNode's arbiter loads: no gpu_memory given) knows no CUDA state of it, so the
// reservation it would keep for a live process (an orphan) is released as soon as the driver
// worker's query answers, `n` times — or, for a client that exits right after its disconnection
// (the flooder), when it exits, if that comes first (the query runs off the loop).
void ExpectOrphansReleasedAsNoCudaProcess(const nlohmann::json& summary, int n,
                                          bool exits_at_once = false) {
  EXPECT_EQ(summary["orphans_created"].get<int>(), n) << summary.dump();
  const int exited = exits_at_once ? summary["orphans_released_exited"].get<int>() : 0;
  EXPECT_EQ(summary["orphans_released_no_device"].get<int>() + exited, n) << summary.dump();
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
  ExpectOrphansReleasedAsNoCudaProcess(summary_, summary_["malformed_channels"].get<int>(),
                                       /*exits_at_once=*/true);
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
  ExpectOrphansReleasedAsNoCudaProcess(summary_, 1, /*exits_at_once=*/true);  // the flooder
}

}  // namespace
}  // namespace gshare::fault
