// Simulator invariants under every policy (and every aggressive ablation) on seeded synthetic
// workloads, on a roomy node and on a cramped one: every request completes or is counted, no
// action breaks the protocol, GPU memory is never exceeded, GPU time is conserved (the sum of
// per-GPU active time equals the integral of the active-GPU count), busy time fits inside it,
// and runs are deterministic; and the same under GPU outages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gshare/sim/engine.h"
#include "gshare/sim/inputs.h"

namespace gshare::sim {
namespace {

const SimWorkload& Workload() {
  static const SimWorkload* w = [] {
    InputOptions in;
    in.synthetic = true;
    in.functions = 60;
    in.duration_s = 900;
    in.seed = 11;
    in.rate_scale = 4;
    const Result<Inputs> inputs = LoadInputs(in);
    EXPECT_TRUE(inputs.ok()) << inputs.status().message();
    return new SimWorkload(inputs.ok() ? inputs->workload : SimWorkload{});
  }();
  return *w;
}

SimOptions Node(int gpus, uint64_t memory) {
  SimOptions o;
  policy::GpuSpec g;
  g.memory_bytes = memory;
  o.gpus.assign(static_cast<size_t>(gpus), g);
  return o;
}

double TimelineIntegral(const RunResult& r) {
  double total = 0;
  Time last = 0;
  int active = 0;
  for (const auto& [t, n] : r.timeline) {
    total += static_cast<double>(t - last) * active;
    last = t;
    active = n;
  }
  total += static_cast<double>(r.end_time - last) * active;
  return total / 1e6;
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& param) {
  std::string n = param.param;
  for (char& ch : n) {
    if (ch == '-') ch = '_';
  }
  return n;
}

class Invariants : public ::testing::TestWithParam<std::string> {};

TEST_P(Invariants, HoldOnRoomyAndCrampedNodes) {
  ASSERT_GT(Workload().requests.size(), 1000u);
  for (const SimOptions& node : {Node(64, 40ull << 30), Node(6, 20ull << 30)}) {
    policy::PolicyConfig c;
    c.gpus = node.gpus;
    auto made = policy::Make(GetParam(), c);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    const RunResult r = Simulate(Workload(), node, **made);
    SCOPED_TRACE(GetParam() + " on " + std::to_string(node.gpus.size()) + " GPUs");
    EXPECT_EQ(r.violations, 0u) << r.first_violation;
    EXPECT_EQ(r.memory_overcommits, 0u);
    EXPECT_EQ(r.requests, Workload().requests.size());
    EXPECT_EQ(r.completed + r.unfinished, r.requests);
    EXPECT_EQ(r.unfinished, 0u);
    EXPECT_LE(r.on_time, r.completed);
    EXPECT_LE(r.peak_gpus, static_cast<int>(node.gpus.size()));
    EXPECT_LE(r.busy_seconds, r.gpu_seconds * node.gpus.size() + 1e-9);
    EXPECT_NEAR(TimelineIntegral(r), r.gpu_seconds, 1e-6 * std::max(1.0, r.gpu_seconds));
    EXPECT_GE(r.gpu_seconds, r.busy_seconds / static_cast<double>(node.gpus.size()));
    // Determinism: the same inputs give the same run.
    auto again = policy::Make(GetParam(), c);
    const RunResult r2 = Simulate(Workload(), node, **again);
    EXPECT_EQ(r2.on_time, r.on_time);
    EXPECT_EQ(r2.swap_bytes, r.swap_bytes);
    EXPECT_DOUBLE_EQ(r2.gpu_seconds, r.gpu_seconds);
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryPolicy, Invariants,
    ::testing::Values("keepalive", "proxy-swap", "fifo", "dual-queue", "aggressive",
                      "aggressive-no-learned", "aggressive-no-residency", "aggressive-no-prefetch",
                      "aggressive-no-deep-evict", "aggressive-no-release", "aggressive-no-scale",
                      "aggressive-no-eager", "aggressive-no-interference", "aggressive-no-edf"),
    ParamName);

// ---- GPU outages (GpuUnavailable / GpuAvailable, as from `gshare-ctl drain` / `undrain`):
// no action touches an unavailable GPU, every function's state has left a GPU by the end of
// its outage, every request still completes (also while every GPU is unavailable for a while:
// functions are held, then served), and runs stay deterministic.

constexpr Time kS = policy::kUsPerSecond;

SimOptions OutageNode(int gpus) {
  SimOptions o = Node(gpus, 40ull << 30);
  o.record_timeline = false;
  // GPU 0 drained for 5 minutes, GPU 1 for 2 minutes inside that, then every GPU for a minute.
  o.outages = {{0, 100 * kS, 400 * kS}, {1, 200 * kS, 320 * kS}};
  for (policy::GpuId i = 0; i < static_cast<policy::GpuId>(gpus); ++i) {
    o.outages.push_back({i, 600 * kS, 660 * kS});
  }
  return o;
}

class Outages : public ::testing::TestWithParam<std::string> {};

TEST_P(Outages, NothingTouchesAnUnavailableGpuAndEveryRequestIsServed) {
  ASSERT_GT(Workload().requests.size(), 1000u);
  const SimOptions node = OutageNode(8);
  policy::PolicyConfig c;
  c.gpus = node.gpus;
  c.pool_gpus = 2;  // proxy-swap: its pool must be refilled from GPUs outside it
  auto made = policy::Make(GetParam(), c);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const RunResult r = Simulate(Workload(), node, **made);
  EXPECT_EQ(r.violations, 0u) << r.first_violation;
  EXPECT_EQ(r.memory_overcommits, 0u);
  EXPECT_EQ(r.outage_residue, 0u);
  EXPECT_EQ(r.unfinished, 0u);
  EXPECT_EQ(r.completed, r.requests);
  // Requests that arrived while every GPU was out were served only after it: some are late,
  // but most of what the policy serves on time without outages stays on time. (Not keepalive:
  // a function moved off a drained GPU waits for a dedicated one, which frees only when
  // another function has been idle for 15 minutes.)
  if (GetParam() == "keepalive") return;
  SimOptions plain = node;
  plain.outages.clear();
  auto fresh = policy::Make(GetParam(), c);
  const RunResult base = Simulate(Workload(), plain, **fresh);
  EXPECT_GT(r.on_time, base.on_time * 3 / 4) << base.on_time;
  auto again = policy::Make(GetParam(), c);
  const RunResult r2 = Simulate(Workload(), node, **again);
  EXPECT_EQ(r2.on_time, r.on_time);
  EXPECT_DOUBLE_EQ(r2.gpu_seconds, r.gpu_seconds);
}

// Without outages the same node serves the same workload with the same result as before the
// event existed (the outage list is the only difference): the events change nothing else.
TEST_P(Outages, AnOutageOfAnUnusedGpuChangesNothing) {
  SimOptions plain = OutageNode(8);
  plain.outages.clear();
  SimOptions unused = plain;
  unused.outages = {{7, 10 * kS, 20 * kS}};  // the last GPU: rarely needed
  policy::PolicyConfig c;
  c.gpus = plain.gpus;
  c.pool_gpus = 4;
  auto a = policy::Make(GetParam(), c);
  auto b = policy::Make(GetParam(), c);
  const RunResult ra = Simulate(Workload(), plain, **a);
  const RunResult rb = Simulate(Workload(), unused, **b);
  EXPECT_EQ(rb.violations, 0u) << rb.first_violation;
  if (ra.peak_gpus < 8) {
    EXPECT_EQ(ra.on_time, rb.on_time);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, Outages,
                         ::testing::Values("keepalive", "proxy-swap", "fifo", "dual-queue",
                                           "aggressive"),
                         ParamName);

}  // namespace
}  // namespace gshare::sim
