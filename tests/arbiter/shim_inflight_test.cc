// In-flight work and the drain, with real processes: an unmodified program (tests/preload's
// preload_probe) under LD_PRELOAD=libgshare.so on two simulated GPUs queues GPU work on a stream
// of its own and returns at once; a swap-out (here through the shim's control socket, the same
// drain the arbiter's orders and token releases use) must wait for exactly that work before it
// unmaps the memory the work reads — also after the vGPU was moved to the other GPU while the
// program's context stayed on device 0 (the demo's SIGSEGV: the drain synchronised the primary
// context of the vGPU's current device, where the program had no work, and unmapped the memory
// under a running kernel).
#include <cuda.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using test::ChildProcess;
using test::UnixRequest;

class ShimInflight : public ::testing::Test {
 protected:
  ShimInflight()
      : simcuda(::testing::UnitTest::GetInstance()->current_test_info()->name(), "2x1GiB") {}

  // A swap probe with a control socket and no arbiter (the drain under test is the same).
  std::map<std::string, std::string> ProbeEnv() const {
    std::vector<std::string> env = simcuda.env();
    env.push_back(std::string("LD_PRELOAD=") + PRELOAD_LIB);
    env.push_back("GSHARE_VGPU_MEMORY=512MiB");
    env.push_back("GSHARE_LOG_LEVEL=info");
    env.push_back("GSHARE_LOG_FILE=" + dir.path() + "/shim.log");
    env.push_back("GSHARE_CONTROL_SOCKET=" + dir.path() + "/control-%p.sock");
    return EnvMap(env);
  }
  std::string Socket(pid_t pid) const {
    return dir.path() + "/control-" + std::to_string(pid) + ".sock";
  }

    // Queues `ms` of work reading the first block, swaps out while it runs, stays out past its
  // end, swaps in on `back_to`, and checks the work's result and the data.
  void SwapOutUnderRunningWork(test::SwapProbe* swap, const std::string& socket, int ms,
                               int back_to) {
    ChildProcess* probe = &swap->process();
    std::string line;
    ASSERT_TRUE(probe->WriteLine("inflight " + std::to_string(ms)));
    ASSERT_TRUE(probe->ReadLine(&line, LineWait()));
    ASSERT_EQ(line, "queued");
    const std::string out = UnixRequest(socket, "swap-out");
    ASSERT_EQ(out.rfind("ok bytes=", 0), 0u) << out << "\n" << ReadFile(dir.path() + "/shim.log");
    last_swap_out_ = out;
    // Stay swapped out until the queued work would long be over: had the swap-out not waited
    // for it, its checksum kernel now reads unmapped memory (SIGSEGV on simcuda) or the copy
    // fails. (No timing assertion: a drain that waited makes this pause irrelevant.)
    std::this_thread::sleep_for(std::chrono::milliseconds(ms + 200));
    ASSERT_EQ(UnixRequest(socket, "swap-in " + std::to_string(back_to)).rfind("ok", 0), 0u);
    ASSERT_TRUE(probe->WriteLine("collect"));
    ASSERT_TRUE(probe->ReadLine(&line, LineWait()))
        << "the program died: " << probe->Wait(ExitWait()) << probe->err();
    EXPECT_EQ(line, "collected ok=1");
    const test::Verified v = swap->Verify();
    ASSERT_TRUE(v.answered) << probe->err();
    EXPECT_TRUE(v.intact()) << v.line;
  }

  TempDir dir;
  const Simcuda simcuda;
  std::string last_swap_out_;  // the control socket's last swap-out reply
};

TEST_F(ShimInflight, SwapOutWaitsForQueuedWorkOnTheSameDevice) {
  test::SwapProbe swap(PROBE_BIN, 3, 4, 64, ProbeEnv(), LineWait());
  ASSERT_TRUE(swap.ready()) << swap.ready_line() << swap.WhyItStopped();
  ChildProcess& probe = swap.process();
  std::string line;
  const std::string socket = Socket(probe.pid());
  // The staging pinned ahead of time: the swap-out then pins nothing, and its reply names
  // every phase (the keys tests/gpu/smoke.sh parses stay first).
  const std::string prepared = UnixRequest(socket, "prepare");
  ASSERT_EQ(prepared.rfind("ok pinned=", 0), 0u) << prepared;
  EXPECT_EQ(prepared.find("ok pinned=0 "), std::string::npos) << prepared;
  SwapOutUnderRunningWork(&swap, socket, 400, 0);
  EXPECT_NE(last_swap_out_.find(" elapsed_ns="), std::string::npos) << last_swap_out_;
  EXPECT_NE(last_swap_out_.find(" copy_ns="), std::string::npos) << last_swap_out_;
  EXPECT_NE(last_swap_out_.find(" drain_ns="), std::string::npos) << last_swap_out_;
  EXPECT_NE(last_swap_out_.find(" pin_ns=0 "), std::string::npos) << last_swap_out_;
  EXPECT_NE(last_swap_out_.find(" unmap_ns="), std::string::npos) << last_swap_out_;
  EXPECT_EQ(swap.Quit(ExitWait()), 0) << probe.err();
}

// The demo's crash came from a vGPU moved to GPU 1 while the program's context and stream
// stayed on GPU 0 (the drain then synchronised the wrong context). Memory and contexts can no
// longer part (docs/multi-gpu.md): the debug socket refuses a swap-in onto a GPU other than the
// program's (the arbiter moves a function through the driver's checkpoint instead), and the
// drain waits for the queued work across swaps on the program's GPU.
TEST_F(ShimInflight, SwapInOntoAnotherGpuIsRefusedAndDrainsStayCorrect) {
  test::SwapProbe swap(PROBE_BIN, 3, 4, 64, ProbeEnv(), LineWait());
  ASSERT_TRUE(swap.ready()) << swap.ready_line() << swap.WhyItStopped();
  ChildProcess& probe = swap.process();
  std::string line;
  const std::string socket = Socket(probe.pid());
  ASSERT_EQ(UnixRequest(socket, "swap-out").rfind("ok", 0), 0u);
  EXPECT_EQ(UnixRequest(socket, "swap-in 1"), "error CUDA_ERROR_INVALID_DEVICE");
  ASSERT_EQ(UnixRequest(socket, "swap-in 0").rfind("ok", 0), 0u);
  EXPECT_NE(UnixRequest(socket, "stats").find("device=0"), std::string::npos);
  SwapOutUnderRunningWork(&swap, socket, 400, 0);
  SwapOutUnderRunningWork(&swap, socket, 200, 0);
  EXPECT_EQ(swap.Quit(ExitWait()), 0) << probe.err();
}

// The longest time a grant was held before its release began (the shim logs "released grant N
// after holding it X us (release began after Y us)"; Y excludes the drain) in `log` from byte
// `from` on, in µs; -1 if none.
long LongestHoldUs(const std::string& log, size_t from) {
  static const std::regex kRelease(
      "released grant [0-9]+ after holding it [0-9]+ us \\(release began after ([0-9]+) us\\)");
  long longest = -1;
  const std::string tail = log.size() > from ? log.substr(from) : std::string();
  for (std::sregex_iterator it(tail.begin(), tail.end(), kRelease), end; it != end; ++it) {
    longest = std::max(longest, std::stol((*it)[1].str()));
  }
  return longest;
}

// The longest hold logged after `from`, once one of at least `at_least` us is there or the safety
// net (scaled) has passed: the shim logs a release when it happens, after the program's last
// answer, so reading the log at once raced the hold that ended last.
long LongestHoldOnceUs(const std::string& path, size_t from, long at_least) {
  const auto deadline = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(10));
  long longest = LongestHoldUs(ReadFile(path), from);
  while (longest < at_least && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    longest = LongestHoldUs(ReadFile(path), from);
  }
  return longest;
}

// Idle release with an arbiter counts work in flight, not only submissions: a program that
// queues 400 ms of GPU work and then waits without submitting keeps its token until the work is
// done (before, it was released ~300 µs after the last submission, while the kernel ran); a
// graph capture held open keeps the token too, and the shim's queries never invalidate it.
TEST_F(ShimInflight, TokenIsKeptWhileWorkIsInFlightOrAStreamCaptures) {
  ArbiterProcess arb{dir, {"--slice", "5ms"}};
  arb.env = simcuda.env();
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  const std::string log = dir / "held.log";
  std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "512MiB", "held", log);
  env.push_back("GSHARE_LOG_LEVEL=debug");
  test::SwapProbe swap(PROBE_BIN, 3, 4, 64, EnvMap(env), LineWait());
  ASSERT_TRUE(swap.ready()) << swap.ready_line() << swap.WhyItStopped();
  ChildProcess& probe = swap.process();
  std::string line;

  size_t from = ReadFile(log).size();
  ASSERT_TRUE(probe.WriteLine("inflight 400"));
  ASSERT_TRUE(probe.ReadLine(&line, LineWait()));
  ASSERT_EQ(line, "queued");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the program submits nothing
  ASSERT_TRUE(probe.WriteLine("collect"));
  ASSERT_TRUE(probe.ReadLine(&line, LineWait()));
  EXPECT_EQ(line, "collected ok=1");
  // A lower bound only: the grant cannot have been given back before the kernel ended.
  EXPECT_GE(LongestHoldOnceUs(log, from, 400'000), 400'000) << ReadFile(log).substr(from);

  from = ReadFile(log).size();
  ASSERT_TRUE(probe.WriteLine("capture 400"));
  ASSERT_TRUE(probe.ReadLine(&line, LineWait()));
  EXPECT_EQ(line, "captured end=" + std::to_string(CUDA_ERROR_NOT_SUPPORTED))
      << "the capture was disturbed (" << CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
      << " = invalidated)";
  const test::Verified v = swap.Verify();
  ASSERT_TRUE(v.answered) << probe.err();
  EXPECT_TRUE(v.intact()) << v.line;
  EXPECT_GE(LongestHoldOnceUs(log, from, 400'000), 400'000) << ReadFile(log).substr(from);
  EXPECT_EQ(swap.Quit(ExitWait()), 0) << probe.err();
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["client_deaths"], 0) << summary.dump();
}

}  // namespace
}  // namespace gshare::arbiter::testing
