// FunctionSpec::pinned under every policy, on the MiniNode: a function pinned to its GPU (the
// arbiter's MPS clients) is never a victim of memory pressure or of a placement that needs
// room (another function goes instead), never moved to another GPU when its own is busy,
// never parked or deep-evicted when idle (keepalive expiry, idle timeouts), held rather than
// moved while its GPU is unavailable, and first placed where the environment keeps its state
// (FunctionRegistered::state_on); with pinned_parkable, parked on its GPU under memory pressure
// and brought back there only.
#include <gtest/gtest.h>

#include <string>

#include "mini_node.h"

namespace gshare::policy::testing {
namespace {

FunctionSpec Pinned(FunctionSpec spec) {
  spec.pinned = true;
  return spec;
}

// Every action naming f in the node's log.
std::string Trail(const MiniNode& node, FunctionId f) {
  std::string s;
  for (const MiniNode::Logged& l : node.log()) {
    if (l.action.function == f) {
      s += std::to_string(l.at) + ":" + ActionKindName(l.action.kind) + "(g" +
           std::to_string(l.action.gpu) + ") ";
    }
  }
  return s;
}

// f was swapped in exactly once (onto `*gpu`, when given: checked) and never left: no swap-out,
// no deep eviction, no second swap-in (a move). Returns the GPU.
GpuId ExpectStayedPut(const MiniNode& node, FunctionId f, GpuId want = kNoGpu) {
  GpuId on = kNoGpu;
  int swap_ins = 0;
  for (const MiniNode::Logged& l : node.log()) {
    if (l.action.function != f) continue;
    EXPECT_NE(l.action.kind, ActionKind::kSwapOut) << "at " << l.at << ": " << Trail(node, f);
    EXPECT_NE(l.action.kind, ActionKind::kDeepEvict) << "at " << l.at << ": " << Trail(node, f);
    if (l.action.kind == ActionKind::kSwapIn) {
      ++swap_ins;
      on = l.action.gpu;
    }
  }
  EXPECT_EQ(swap_ins, 1) << Trail(node, f);
  if (want != kNoGpu) {
    EXPECT_EQ(on, want) << Trail(node, f);
  }
  return on;
}

// How many `kind` actions name f; each of them is expected on GPU g (kNoGpu: anywhere).
int CountOn(const MiniNode& node, FunctionId f, ActionKind kind, GpuId g) {
  int n = 0;
  for (const MiniNode::Logged& l : node.log()) {
    if (l.action.function != f || l.action.kind != kind) continue;
    ++n;
    if (g != kNoGpu) {
      EXPECT_EQ(l.action.gpu, g) << "at " << l.at << ": " << Trail(node, f);
    }
  }
  return n;
}

bool Evicted(const MiniNode& node, FunctionId f) {
  for (const MiniNode::Logged& l : node.log()) {
    if (l.action.function == f &&
        (l.action.kind == ActionKind::kSwapOut || l.action.kind == ActionKind::kDeepEvict)) {
      return true;
    }
  }
  return false;
}

bool Released(const MiniNode& node, GpuId g, Time after) {
  for (const MiniNode::Logged& l : node.log()) {
    if (l.at > after && l.action.kind == ActionKind::kReleaseGpu && l.action.gpu == g) return true;
  }
  return false;
}

class PinnedTest : public ::testing::TestWithParam<std::string> {
 protected:
  bool Keepalive() const { return GetParam() == "keepalive"; }
};

// One 1 GB GPU holds pinned P (300 MB, used first: the least recently used and cheapest victim)
// and B (300 MB), both idle; C (600 MB) needs 200 MB more: B goes, never P. Then memory
// pressure asks for more than B's and C's bytes could give while P stays: P still stays.
TEST_P(PinnedTest, MemoryPressureEvictsAnotherFunctionNeverThePinnedOne) {
  Driver d(GetParam(), 1, SmallGpu(1'000'000'000));
  MiniNode node(d, 1);
  node.Register(0, 0, Pinned(Fn(300, 1000, 50'000)));
  node.Register(0, 1, Fn(300, 1000, 50'000));
  node.Register(0, 2, Fn(600, 1000, 50'000));
  node.RequestAt(0, 1'000, 1'000);
  node.RequestAt(1, 5'000, 1'000);
  node.RequestAt(2, 20'000, 1'000);
  node.RunUntil(200'000);
  if (!Keepalive()) {  // keepalive gives each function a GPU of its own: P's, one GPU here
    EXPECT_EQ(node.stats(2).completed, 1) << Trail(node, 0) << "| " << Trail(node, 1);
    EXPECT_TRUE(Evicted(node, 1)) << Trail(node, 1);
  }
  node.Inject(MemoryPressure{0, 900'000'000});
  node.RunUntil(300'000);
  ExpectStayedPut(node, 0, 0);
  EXPECT_EQ(node.stats(0).completed, 1);
}

// Pinned P and H share GPU 0 (both predicted to run 1 ms); GPU 1 is active with Q's state. H's
// burst overruns (100 ms) while P's next request (8 ms SLO) waits behind it: the aggressive
// policy would relocate or rescue P onto GPU 1 — not a pinned one, which is served on GPU 0
// after H.
TEST_P(PinnedTest, APinnedFunctionWhoseGpuIsBusyIsNotMoved) {
  Driver d(GetParam(), 2, SmallGpu(1'000'000'000));
  MiniNode node(d, 2);
  node.Register(0, 0, Pinned(Fn(2, 1000, 8'000)));
  node.Register(0, 1, Fn(1, 1000, 100'000));
  node.Register(0, 2, Fn(1, 1000, 100'000), /*state_on=*/1);
  node.RequestAt(0, 500, 1'000);
  node.RequestAt(2, 1'000, 1'000);
  node.RequestAt(1, 4'000, 100'000);
  node.RequestAt(0, 30'000, 1'000);
  node.RunUntil(300'000);
  const GpuId on = ExpectStayedPut(node, 0);
  EXPECT_EQ(node.stats(0).completed, 2) << Trail(node, 0);
  // Every grant of P is on its GPU.
  for (const MiniNode::Logged& l : node.log()) {
    if (l.action.function == 0 && l.action.kind == ActionKind::kGrant) {
      EXPECT_EQ(l.action.gpu, on) << Trail(node, 0);
    }
  }
}

// Idle for long past every policy's idle timeouts (keepalive_ttl 2 s here, fifo's and the slack
// scheduler's 60 s): unpinned Q is parked or deep-evicted (proxy-swap evicts only on demand),
// pinned P stays resident and its GPU is never released.
TEST_P(PinnedTest, IdleExpiryNeverEvictsAPinnedFunction) {
  PolicyConfig config;
  config.gpus.assign(2, SmallGpu(1'000'000'000));
  config.keepalive_ttl = 2 * kUsPerSecond;
  Driver d(GetParam(), config);
  MiniNode node(d, 2, /*step=*/1'000);
  node.Register(0, 0, Pinned(Fn(100, 1000, 50'000)));
  node.Register(0, 1, Fn(100, 1000, 50'000));
  node.RequestAt(0, 1'000, 1'000);
  node.RequestAt(1, 2'000, 1'000);
  node.RunUntil(90 * kUsPerSecond);
  const GpuId on = ExpectStayedPut(node, 0);
  if (GetParam() != "proxy-swap") {
    EXPECT_TRUE(Evicted(node, 1)) << Trail(node, 1);
  }
  EXPECT_FALSE(Released(node, on, 10'000));
  // Still served where it is.
  node.RequestAt(0, node.now() + 1'000, 1'000);
  node.RunUntil(node.now() + 100'000);
  EXPECT_EQ(node.stats(0).completed, 2) << Trail(node, 0);
  ExpectStayedPut(node, 0, on);
}

// Its GPU becomes unavailable: the pinned function is not moved off; a request waits (no
// grant anywhere) and is served there once the GPU is back.
TEST_P(PinnedTest, AnUnavailableGpuKeepsItsPinnedFunctionUntilItIsBack) {
  Driver d(GetParam(), 2, SmallGpu(1'000'000'000));
  MiniNode node(d, 2);
  node.Register(0, 0, Pinned(Fn(100, 1000, 50'000)));
  node.RequestAt(0, 1'000, 1'000);
  node.RunUntil(10'000);
  const GpuId on = ExpectStayedPut(node, 0);
  ASSERT_NE(on, kNoGpu);
  node.Inject(GpuUnavailable{on});
  node.RequestAt(0, 12'000, 1'000);
  node.RunUntil(50'000);
  EXPECT_EQ(node.stats(0).completed, 1) << Trail(node, 0);
  node.Inject(GpuAvailable{on});
  node.RunUntil(100'000);
  EXPECT_EQ(node.stats(0).completed, 2) << Trail(node, 0);
  ExpectStayedPut(node, 0, on);
}

// Registered with its state kept on GPU 1 (state_on): its first placement goes there, under
// every policy, although GPU 0 would be the first choice of most.
TEST_P(PinnedTest, TheFirstPlacementGoesWhereItsStateIs) {
  Driver d(GetParam(), 2, SmallGpu(1'000'000'000));
  MiniNode node(d, 2);
  node.Register(0, 0, Pinned(Fn(100, 1000, 50'000)), /*state_on=*/1);
  node.RequestAt(0, 1'000, 1'000);
  node.RunUntil(20'000);
  ExpectStayedPut(node, 0, 1);
  EXPECT_EQ(node.stats(0).completed, 1) << Trail(node, 0);
}

// FunctionSpec::pinned_parkable (the arbiter's MPS clients with mps_swaps_verified): memory
// pressure on its GPU parks pinned P there (a swap-out: its 20 MB context stays; never a deep
// eviction), and its next request swaps it back in onto that GPU only, although GPU 1 is active
// (Q's) and empty enough. A plain pinned function under the same pressure stays (the first test).
TEST_P(PinnedTest, AParkablePinnedFunctionIsParkedOnItsGpuAndComesBackThere) {
  Driver d(GetParam(), 2, SmallGpu(1'000'000'000));
  MiniNode node(d, 2);
  FunctionSpec p = Pinned(Fn(300, 1000, 50'000, /*ctx_mb=*/20));
  p.pinned_parkable = true;
  node.Register(0, 0, p, /*state_on=*/0);
  node.Register(0, 1, Fn(100, 1000, 50'000), /*state_on=*/1);
  node.RequestAt(0, 1'000, 1'000);
  node.RequestAt(1, 1'500, 1'000);
  node.RunUntil(20'000);
  ASSERT_EQ(node.stats(0).completed, 1) << Trail(node, 0);
  // 680 MB free on GPU 0; 200 MB more are needed: only parking P gives them.
  node.Inject(MemoryPressure{0, 200'000'000});
  node.RunUntil(40'000);
  EXPECT_EQ(CountOn(node, 0, ActionKind::kSwapOut, 0), 1) << Trail(node, 0);
  EXPECT_EQ(CountOn(node, 0, ActionKind::kDeepEvict, kNoGpu), 0) << Trail(node, 0);
  node.RequestAt(0, node.now() + 1'000, 1'000);
  node.RunUntil(node.now() + 100'000);
  EXPECT_EQ(node.stats(0).completed, 2) << Trail(node, 0);
  EXPECT_EQ(CountOn(node, 0, ActionKind::kSwapIn, 0), 2)
      << "placed, then back from parked: " << Trail(node, 0);
  EXPECT_EQ(CountOn(node, 0, ActionKind::kGrant, 0), 2) << Trail(node, 0);
  EXPECT_EQ(CountOn(node, 0, ActionKind::kDeepEvict, kNoGpu), 0) << Trail(node, 0);
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, PinnedTest,
                         ::testing::Values("keepalive", "proxy-swap", "fifo", "dual-queue",
                                           "aggressive", "aggressive-corun-pack"),
                         PolicyParamName);

}  // namespace
}  // namespace gshare::policy::testing
