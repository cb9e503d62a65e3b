// The arbiter client wired into libgshare.so: unmodified driver-API programs (tests/preload's
// preload_probe) run under LD_PRELOAD with GSHARE_ARBITER_SOCKET against a real gshare-arbiter
// on simcuda, and the shim's arbiter configuration variables are parsed and checked.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "runtime/config.h"
#include "runtime/submission_gate.h"
#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::seconds;

// Two unmodified programs whose vGPU quotas (768 MiB each) sum to 1.5x the simulated GPU (1 GiB)
// fill, launch checksum kernels and verify on two threads each, repeatedly, both at once. The
// one that does not fit starts swapped out and is swapped in when the other leaves (a busy
// vGPU is never swapped out); time-slice grants go through the shim. Both finish with correct
// data; the reservations never exceeded the GPU.
// A real gshare-arbiter (5 ms slices) managing one simulated 1 GiB GPU, for one test.
class ShimArbiter : public ::testing::Test {
 protected:
  ShimArbiter() : simcuda(::testing::UnitTest::GetInstance()->current_test_info()->name()) {}
  void SetUp() override {
    arb.env = simcuda.env();
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  }
  // Stops the arbiter; its summary must show the GPU's reservations never exceeded it.
  nlohmann::json StopAndCheckGpu() {
    nlohmann::json summary = arb.Stop();
    EXPECT_TRUE(summary.is_object()) << ReadFile(arb.log());
    if (!summary.is_object()) return summary;
    const auto& gpu = summary["gpus"][0];
    EXPECT_LE(gpu["peak_reserved_bytes"].get<uint64_t>(), gpu["usable_bytes"].get<uint64_t>());
    EXPECT_LE(gpu["usable_bytes"].get<uint64_t>(), 1ull << 30);
    EXPECT_EQ(gpu["overshoot_events"], 0);
    EXPECT_EQ(gpu["reserved_bytes"].get<uint64_t>(), 0u);
    return summary;
  }

  TempDir dir;
  const Simcuda simcuda;
  ArbiterProcess arb{dir, {"--slice", "5ms"}};
};

TEST_F(ShimArbiter, OversubscribedPreloadedProgramsTakeTurnsWithCorrectData) {
  struct Program {
    pid_t pid;
    std::string out, err, log;
  };
  std::vector<Program> programs;
  for (int i = 0; i < 2; ++i) {
    const std::string name = "p" + std::to_string(i);
    Program p{-1, dir / (name + ".out"), dir / (name + ".err"), dir / (name + ".log")};
    p.pid = Spawn({PROBE_BIN, "stress", "2", "200"}, p.out, p.err,
                  ShimEnv(simcuda, arb.socket(), "768MiB", name, p.log));
    ASSERT_GT(p.pid, 0);
    programs.push_back(p);
  }
  for (const Program& p : programs) {
    EXPECT_EQ(ExitCode(WaitFor(p.pid, Scaled(seconds(120)))), 0)
        << ReadFile(p.out) << ReadFile(p.err) << ReadFile(p.log) << ReadFile(arb.log());
    const std::string out = ReadFile(p.out);
    EXPECT_NE(out.find("done\nerrors=0\n"), std::string::npos) << out << ReadFile(p.log);
    EXPECT_NE(ReadFile(p.log).find("registered with the arbiter"), std::string::npos)
        << ReadFile(p.log);
  }
  const auto summary = StopAndCheckGpu();
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["registrations"], 2) << summary.dump();
  EXPECT_GT(summary["swap_outs"].get<int>(), 0) << summary.dump() << ReadFile(arb.log());
  EXPECT_GT(summary["swap_ins"].get<int>(), 0) << summary.dump();
}

// Starts `count` `preload_probe swap` programs (a 128 MiB block plus random allocations,
// checksummed) under the shim with `quota`, then asks each in turn, `rounds` times, to verify
// its data (copies back and checksum kernels) at unchanged pointers; each must exit cleanly.
// Every turn makes a program busy, so the arbiter swaps idle ones out to make room for it.
// With `grow_mib` > 0 each turn first adds a block of that size (uploaded with asynchronous
// copies), so the swap image grows between swaps.
void RunSwapProbes(const Simcuda& simcuda, const ArbiterProcess& arb, const TempDir& dir,
                   int count, const std::string& quota, int rounds, int grow_mib = 0) {
  std::vector<std::unique_ptr<test::SwapProbe>> probes;
  std::vector<std::vector<std::string>> pointers;
  for (int i = 0; i < count; ++i) {
    const std::string name = "s" + std::to_string(i);
    probes.push_back(std::make_unique<test::SwapProbe>(
        PROBE_BIN, static_cast<uint32_t>(7 + i), 10, 128,
        EnvMap(ShimEnv(simcuda, arb.socket(), quota, name, dir / (name + ".log"))), LineWait()));
    ASSERT_TRUE(probes.back()->ready())
        << probes.back()->ready_line() << ReadFile(dir / (name + ".log"));
    pointers.push_back(probes.back()->pointers());
    ASSERT_FALSE(pointers.back().empty());
  }
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < probes.size(); ++i) {
      test::ChildProcess& process = probes[i]->process();
      if (grow_mib > 0) {
        std::string line;
        ASSERT_TRUE(process.WriteLine("grow " + std::to_string(grow_mib)));
        ASSERT_TRUE(process.ReadLine(&line, LineWait())) << "probe " << i << " died: " << process.err();
        ASSERT_EQ(line.rfind("grown ptr=", 0), 0u) << line;
        pointers[i].push_back(line.substr(6));
      }
      const test::Verified v = probes[i]->Verify();
      ASSERT_TRUE(v.answered)
          << "probe " << i << " died: " << process.err() << ReadFile(dir / ("s" + std::to_string(i) + ".log"))
          << ReadFile(arb.log());
      EXPECT_TRUE(v.intact()) << v.line;
      EXPECT_EQ(v.pointers, pointers[i]) << "pointers must not change";
    }
  }
  for (auto& probe : probes) EXPECT_EQ(probe->Quit(ExitWait()), 0) << probe->process().err();
}

// Two programs holding real data (a 128 MiB block plus random allocations, checksummed) with
// 768 MiB quotas on a 1 GiB GPU, used in turns: whenever one works, the arbiter swaps the other
// (idle) out to make room, and the data of both survives every swap at the same addresses.
TEST_F(ShimArbiter, IdleProgramsAreSwappedOutForEachOtherWithDataIntact) {
  RunSwapProbes(simcuda, arb, dir, 2, "768MiB", 3);
  const auto summary = StopAndCheckGpu();
  ASSERT_TRUE(summary.is_object());
  // Every turn after the first needs the other program out: at least 5 swaps each way.
  EXPECT_GE(summary["swap_outs"].get<int>(), 5) << summary.dump() << ReadFile(arb.log());
  EXPECT_GE(summary["swap_ins"].get<int>(), 5) << summary.dump();
  const std::string arb_log = ReadFile(arb.log());
  EXPECT_TRUE(std::regex_search(arb_log, std::regex("swap-out acknowledged: [1-9]"))) << arb_log;
  EXPECT_TRUE(std::regex_search(arb_log, std::regex("swap-in acknowledged: [1-9]"))) << arb_log;
}

// Regression for the SIGSEGV of the end-to-end demo (briefs/repro-crash.sh): vGPUs moved between
// two GPUs while they grow. Four programs with 600 MiB quotas on two simulated 1 GiB GPUs take
// turns, each turn uploading one more 64 MiB block with asynchronous copies; the arbiter swaps
// idle ones out and swaps busy ones in onto whichever GPU has room. A grown image swapped out
// from GPU 1 (whose primary context only the swap engine retained while the programs used
// device 0's, before session 5) was pinned in that context and lost with it, and the next
// swap-in copied from unmapped host memory. Every program must keep running with its data
// intact at unchanged pointers. Since session 5 the programs' contexts move with their vGPU
// (the arbiter's checkpoint move, docs/multi-gpu.md), and simcuda refuses kernels and copies
// that would reach memory on another GPU, so "intact" also means "computed where the memory is".
TEST(ShimArbiterTwoGpus, VgpusMovedBetweenGpusKeepTheirData) {
  TempDir dir;
  const Simcuda simcuda("two-gpus", "2x1GiB");
  ArbiterProcess arb{dir, {"--slice", "5ms"}};
  arb.env = simcuda.env();
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  RunSwapProbes(simcuda, arb, dir, 4, "600MiB", 3, /*grow_mib=*/64);
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  for (const auto& gpu : summary["gpus"]) {
    EXPECT_LE(gpu["peak_reserved_bytes"].get<uint64_t>(), gpu["usable_bytes"].get<uint64_t>());
    EXPECT_EQ(gpu["overshoot_events"], 0);
  }
  EXPECT_GE(summary["swap_ins"].get<int>(), 6) << summary.dump() << ReadFile(arb.log());
  EXPECT_GT(summary["context_moves"].get<int>(), 0) << summary.dump();
  // The path that crashed was taken: some vGPU was swapped in onto GPU 1 and out again later.
  int moved_and_out_again = 0;
  for (int i = 0; i < 4; ++i) {
    const std::string log = ReadFile(dir / ("s" + std::to_string(i) + ".log"));
    const size_t on_one = log.find("onto device 1");
    if (on_one != std::string::npos && log.find("swapped out", on_one) != std::string::npos) {
      ++moved_and_out_again;
    }
  }
  EXPECT_GT(moved_and_out_again, 0) << ReadFile(arb.log());
}

// A socket path where no arbiter listens: the shim logs it and runs stand-alone (fail-open).
TEST(ShimArbiterStandAlone, NoArbiterListeningRunsStandAloneAndLogsIt) {
  TempDir dir;
  const Simcuda simcuda("alone");
  const std::string out = dir / "p.out";
  const std::string log = dir / "p.log";
  const pid_t pid = Spawn({PROBE_BIN, "stress", "2", "10"}, out, dir / "p.err",
                          ShimEnv(simcuda, dir / "nobody.sock", "256MiB", "alone", log));
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCode(WaitFor(pid, Scaled(seconds(60)))), 0) << ReadFile(out) << ReadFile(log);
  EXPECT_NE(ReadFile(out).find("done\nerrors=0\n"), std::string::npos) << ReadFile(out);
  const std::string text = ReadFile(log);
  EXPECT_NE(text.find("running stand-alone"), std::string::npos) << text;
  EXPECT_EQ(text.find("registered with the arbiter"), std::string::npos) << text;
}

// The shim's arbiter variables.
const char* Lookup(const char* name, void* ctx) {
  for (const auto& [k, v] : *static_cast<std::vector<std::pair<std::string, std::string>>*>(ctx)) {
    if (k == name) return v.c_str();
  }
  return nullptr;
}

preload::Config Parse(std::vector<std::pair<std::string, std::string>> vars) {
  return preload::ParseConfig(&Lookup, &vars, 42);
}

TEST(ShimArbiterConfig, DefaultsAreStandAloneFailOpen) {
  const preload::Config c = Parse({});
  EXPECT_TRUE(c.error.ok());
  EXPECT_EQ(c.arbiter_socket, "");
  EXPECT_EQ(c.idle_release_us, 300u);
  EXPECT_FALSE(c.arbiter_fail_closed);
}

TEST(ShimArbiterConfig, ParsesSocketIdleReleaseAndFailMode) {
  const preload::Config c = Parse({{"GSHARE_ARBITER_SOCKET", "/run/gshare/a.sock"},
                                   {"GSHARE_IDLE_RELEASE_US", "750"},
                                   {"GSHARE_ARBITER_FAIL", "closed"}});
  EXPECT_TRUE(c.error.ok()) << c.error.message();
  EXPECT_EQ(c.arbiter_socket, "/run/gshare/a.sock");
  EXPECT_EQ(c.idle_release_us, 750u);
  EXPECT_TRUE(c.arbiter_fail_closed);
  EXPECT_FALSE(Parse({{"GSHARE_ARBITER_FAIL", "open"}}).arbiter_fail_closed);
  EXPECT_TRUE(c.prepin);  // default: the staging is pinned ahead of time
  EXPECT_FALSE(Parse({{"GSHARE_PREPIN", "0"}}).prepin);
  EXPECT_TRUE(Parse({{"GSHARE_PREPIN", "1"}}).prepin);
}

TEST(ShimArbiterConfig, MalformedValuesAreNamed) {
  const preload::Config c =
      Parse({{"GSHARE_IDLE_RELEASE_US", "soon"}, {"GSHARE_ARBITER_FAIL", "maybe"}});
  EXPECT_NE(c.error.message().find("GSHARE_IDLE_RELEASE_US='soon'"), std::string::npos)
      << c.error.message();
  EXPECT_NE(c.error.message().find("GSHARE_ARBITER_FAIL='maybe'"), std::string::npos)
      << c.error.message();
  EXPECT_FALSE(Parse({{"GSHARE_IDLE_RELEASE_US", "0"}}).error.ok());
  EXPECT_NE(Parse({{"GSHARE_PREPIN", "yes"}}).error.message().find("GSHARE_PREPIN='yes'"),
            std::string::npos);
}

// The gate's activity marks, which the client's idle detection reads through ShimHost.
TEST(ShimArbiterGate, TakeActivitySeesAdmittedSubmissionsOnce) {
  preload::SubmissionGate gate;
  EXPECT_FALSE(gate.TakeActivity());
  unsigned slot = 0;
  ASSERT_TRUE(gate.TryEnter(&slot));
  EXPECT_TRUE(gate.TakeActivity());  // touched, and inside now
  gate.Exit(slot);
  EXPECT_FALSE(gate.TakeActivity());  // the mark was cleared by the previous call
  ASSERT_TRUE(gate.TryEnter(&slot));
  gate.Exit(slot);
  EXPECT_TRUE(gate.TakeActivity());  // a submission came and went since the last call
  EXPECT_FALSE(gate.TakeActivity());
  gate.Close();
  EXPECT_FALSE(gate.TryEnter(&slot));
  EXPECT_FALSE(gate.TakeActivity());  // a refused submission is no activity
  gate.Open();
}

}  // namespace
}  // namespace gshare::arbiter::testing
