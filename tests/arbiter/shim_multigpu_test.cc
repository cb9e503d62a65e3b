// Functions on a multi-GPU node compute where their memory is (docs/multi-gpu.md): unmodified
// programs (tests/preload's preload_probe) under the shim with a real gshare-arbiter on two
// simulated GPUs see exactly one device, the GPU the arbiter assigned; their contexts, kernels
// and memory are there; and a function the arbiter moves to the other GPU (its process restored
// there by the driver's checkpoint) computes there afterwards with its data intact. simcuda
// refuses kernels and copies that reach memory their device cannot (tests/simcuda/reach_test.cc),
// so "verify" (copies back and checksum kernels) fails wherever contexts and memory disagree.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

// The probe's data and kernel checksums are intact ("verify") and it computes on one GPU
// ("where"): it sees one device, its context and its memory are on the same GPU, and no other
// GPU holds a primary context of it. `context`: logs to print on failure. Returns its "where".
test::Where ExpectIntactOnOneGpu(test::SwapProbe* probe, const std::string& context) {
  const test::Verified verified = probe->Verify();
  EXPECT_TRUE(verified.intact()) << verified.line << context;
  const test::Where w = probe->AskWhere();
  EXPECT_EQ(w.count, 1) << context;
  EXPECT_EQ(w.ptr_ordinal, w.ctx_device) << context;
  EXPECT_EQ(w.primary, w.ctx_device >= 0 ? 1u << w.ctx_device : 0u)
      << "contexts on other GPUs: " << w.primary << context;
  return w;
}

// "quit" to every probe: each exits cleanly.
void QuitAll(const std::vector<test::SwapProbe*>& probes) {
  for (test::SwapProbe* probe : probes) {
    EXPECT_EQ(probe->Quit(ExitWait()), 0) << probe->process().err();
  }
}

std::vector<test::SwapProbe*> Raw(const std::vector<std::unique_ptr<test::SwapProbe>>& probes) {
  std::vector<test::SwapProbe*> raw;
  for (const auto& probe : probes) raw.push_back(probe.get());
  return raw;
}

// A real gshare-arbiter managing two simulated 1 GiB GPUs, for one test.
struct TwoGpuNode {
  TwoGpuNode(const std::string& tag, std::vector<std::string> args)
      : simcuda(tag, "2x1GiB"), arb(dir, std::move(args)) {
    arb.env = simcuda.env();
  }

  // Starts `preload_probe swap` named `name` under the shim (a `big_mib` block plus a few random
  // allocations, checksummed; its log in dir/<name>.log). `extra_env`: more "K=V" for the probe
  // (e.g. simcuda's fault injection). nullptr (and a test failure) if it did not get ready.
  std::unique_ptr<test::SwapProbe> StartProbe(const std::string& name, const std::string& quota,
                                              int big_mib,
                                              const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), quota, name, Log(name));
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    auto probe =
        std::make_unique<test::SwapProbe>(PROBE_BIN, 11, 6, big_mib, EnvMap(env), LineWait());
    if (!probe->ready()) {
      ADD_FAILURE() << name << ": " << probe->ready_line() << ReadFile(Log(name))
                    << ReadFile(arb.log());
      return nullptr;
    }
    return probe;
  }
  // The shim's log of the probe `name`.
  std::string Log(const std::string& name) const { return dir / (name + ".log"); }

  TempDir dir;
  const Simcuda simcuda;
  ArbiterProcess arb;
};

// Two programs whose 700 MiB quotas do not fit together on one 1 GiB GPU: the arbiter assigns
// one per GPU at registration, and each program's device is its assigned GPU from the start
// (the empty vGPU is re-homed inside cuInit, before the program's first cuDeviceGet). Later the
// policy may move one (fifo packs them onto GPU 0 in turns): wherever each is, it sees one
// device, its context and its memory are on the same GPU, it holds no context on the other GPU,
// and its kernels read its data there.
TEST(ShimMultiGpu, EachProgramSeesOnlyTheGpuTheArbiterAssigned) {
  TwoGpuNode node("multigpu-assigned", {"--slice", "5ms", "--policy", "fifo"});
  ASSERT_TRUE(node.arb.Start()) << ReadFile(node.arb.log());
  ArbiterProcess& arb = node.arb;
  std::vector<std::unique_ptr<test::SwapProbe>> probes;
  for (const char* name : {"p0", "p1"}) {
    probes.push_back(node.StartProbe(name, "700MiB", 500));
    ASSERT_NE(probes.back(), nullptr);
  }
  {
    const std::string log = ReadFile(node.Log("p1"));  // p0 was assigned GPU 0: nothing moved
    EXPECT_NE(log.find("the application's device is GPU 1 (assigned by the arbiter)"),
              std::string::npos)
        << log << ReadFile(arb.log());
  }
  for (size_t i = 0; i < probes.size(); ++i) {
    const std::string log = ReadFile(node.Log("p" + std::to_string(i)));
    EXPECT_GE(ExpectIntactOnOneGpu(probes[i].get(), log).ctx_device, 0) << log;
  }
  QuitAll(Raw(probes));
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  for (const auto& gpu : summary["gpus"]) EXPECT_EQ(gpu["overshoot_events"], 0) << summary.dump();
}

// Four programs with 600 MiB quotas (probe environment plus `extra_env`) take turns on the
// node's two 1 GiB GPUs for three rounds; after every turn each program's data and kernel
// checksums are intact and its context, memory and primary contexts are on one GPU. Returns the
// arbiter's summary.
nlohmann::json TakeTurns(TwoGpuNode& node, const std::vector<std::string>& extra_env) {
  ArbiterProcess& arb = node.arb;
  std::vector<std::unique_ptr<test::SwapProbe>> probes;
  for (int i = 0; i < 4; ++i) {
    probes.push_back(
        node.StartProbe("m" + std::to_string(i), "600MiB", 300, extra_env));
    if (probes.back() == nullptr) return nlohmann::json();
  }
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < probes.size(); ++i) {
      ExpectIntactOnOneGpu(probes[i].get(),
                           ReadFile(node.Log("m" + std::to_string(i))) + ReadFile(arb.log()));
    }
  }
  QuitAll(Raw(probes));
  return arb.Stop();
}

// Four programs with 600 MiB quotas take turns on two 1 GiB GPUs: the arbiter swaps idle ones
// out and swaps busy ones in wherever there is room. A swapped-out program placed on the other
// GPU is moved whole (lock, checkpoint, restore with the GPU pair, unlock, then the shim's
// swap-in there): afterwards its context is on its memory's GPU, its data is intact and its
// kernels run there, at unchanged pointers.
TEST(ShimMultiGpu, ProgramsMovedToTheOtherGpuComputeThere) {
  TwoGpuNode node("multigpu-moved", {"--slice", "5ms"});
  ASSERT_TRUE(node.arb.Start()) << ReadFile(node.arb.log());
  const nlohmann::json summary = TakeTurns(node, {});
  ASSERT_TRUE(summary.is_object()) << ReadFile(node.arb.log());
  EXPECT_GT(summary["context_moves"].get<int>(), 0) << summary.dump() << ReadFile(node.arb.log());
  EXPECT_NE(ReadFile(node.arb.log()).find("contexts moved from GPU"), std::string::npos);
}

// The same with every program's first checkpoint failing (simcuda's fault injection): a move
// whose checkpoint fails leaves the program where it was (unlocked again, swapped out, never
// frozen); it runs again (moved by a later attempt, or placed back) with its data intact.
TEST(ShimMultiGpu, AMoveWhoseCheckpointFailsLeavesTheProgramRunnable) {
  TwoGpuNode node("multigpu-move-fails", {"--slice", "5ms"});
  ASSERT_TRUE(node.arb.Start()) << ReadFile(node.arb.log());
  const nlohmann::json summary = TakeTurns(node, {"SIMCUDA_CHECKPOINT_FAILURES=1"});
  ASSERT_TRUE(summary.is_object()) << ReadFile(node.arb.log());
  EXPECT_NE(ReadFile(node.arb.log()).find("failed at the checkpoint"), std::string::npos)
      << summary.dump() << ReadFile(node.arb.log());
}

// Functions deep-evicted (checkpointed) while idle are restored by the driver wherever the policy
// places them, also onto the other GPU (the checkpoint's GPU pair): the shim learns of the move
// from the grant, its memory manager and its device follow, and it computes there with its data
// intact and no context left behind.
TEST(ShimMultiGpu, RestoredOntoTheOtherGpuTheShimFollows) {
  TwoGpuNode node("multigpu-restored", {"--slice", "5ms", "--deep-evict-after", "100ms"});
  ASSERT_TRUE(node.arb.Start()) << ReadFile(node.arb.log());
  ArbiterProcess& arb = node.arb;
  auto first = node.StartProbe("r0", "700MiB", 128);
  ASSERT_NE(first, nullptr);
  // Wait until the idle function is checkpointed (deep eviction, off its GPU; its service
  // thread's background work may restore it a few times first).
  const auto until = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(30));
  auto checkpointed = [&] {
    const std::string log = ReadFile(arb.log());
    const size_t evicted = log.rfind("'r0' idle for");
    const size_t restored = log.rfind("'r0' restored");
    return evicted != std::string::npos && (restored == std::string::npos || restored < evicted);
  };
  while (!checkpointed() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Another function registers while the first is off its GPU; the policy places both (with
  // 700 MiB quotas on 1 GiB GPUs, one per GPU), restoring a checkpointed one wherever it puts it.
  auto second = node.StartProbe("r1", "700MiB", 128);
  ASSERT_NE(second, nullptr);
  for (test::SwapProbe* probe : {first.get(), second.get()}) {
    ExpectIntactOnOneGpu(probe,
                         ReadFile(node.Log("r0")) + ReadFile(node.Log("r1")) + ReadFile(arb.log()));
  }
  // One of them was restored onto a GPU other than its own, and its shim followed.
  const std::string logs = ReadFile(node.Log("r0")) + ReadFile(node.Log("r1"));
  EXPECT_NE(logs.find("the driver moved this process from GPU"), std::string::npos)
      << logs << ReadFile(arb.log());
  QuitAll({first.get(), second.get()});
  const nlohmann::json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_GT(summary["restores"].get<int>(), 0) << summary.dump() << ReadFile(arb.log());
}

}  // namespace
}  // namespace gshare::arbiter::testing
