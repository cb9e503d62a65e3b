// Fault injection, resources: device out of memory during a swap-in (memory taken by a process
// outside gshare), host memory pressure failing a swap-out, and the shim's reproducer of a free
// while a queued kernel still writes the memory.
#include <sys/resource.h>

#include <fstream>

#include "fault_fixture.h"

namespace gshare::fault {
namespace {

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
  // a takes turns until the fault was reached (or given up on): it must still be running when b
  // needs its memory, however slowly b starts on a loaded machine (with a fixed number of turns
  // it could finish first and leave, and no swap-out was ever ordered).
  const std::string a_may_finish = node_.dir() / "a-may-finish";
  const Worker a = SpawnFunction({"a", "320MiB", 19, 192, 32, 16, 8, 30, {},
                                  {"--wait-before-alloc", go, "--turns-until", a_may_finish}});
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
  std::ofstream(a_may_finish).put('1');
  ExpectIntact(a);
  ExpectIntact(b);
  ExpectCleanNode();
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

}  // namespace
}  // namespace gshare::fault
