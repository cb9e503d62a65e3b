// The default demo as a gshare-sim scenario (tools/sim/scenarios/demo: its 785 requests on 12
// functions, execution times from a dedicated run, 2 GPUs of 2 GiB, simcuda's ~2.2 GB/s swaps,
// the arbiter's 24 GB/s default told to the policy, 100 ms slices). Before the placement fix
// (session 4) the demo's policy swapped 29 GiB in 89 swap-ins here and met 94.6% of SLOs (the
// live demo: 21 GiB each way, 93%): functions evicted each other in LRU order on one GPU while
// the other had room, and berts whose 154 ms swap cannot meet their 150 ms SLO were evicted.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gshare/sim/engine.h"
#include "gshare/sim/inputs.h"

namespace gshare::sim {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

// `copies`: evictions copy to the host first, in the simulator and in the policy's model, as
// in the live demo (SimOptions::swap_out_copies, PolicyConfig::swap_out_copies).
RunResult RunDemo(const std::string& policy_name, uint64_t gpu_memory = 2 * kGiB,
                  bool copies = false, bool policy_knows = true) {
  InputOptions in;
  in.format = "csv";
  in.trace = std::string(GSHARE_DEMO_SCENARIO_DIR) + "/requests.csv";
  in.catalog = std::string(GSHARE_DEMO_SCENARIO_DIR) + "/catalog.toml";
  in.models_by_name = true;
  const Result<Inputs> loaded = LoadInputs(in);
  EXPECT_EQ(loaded.status().message(), "");
  const Inputs inputs = loaded.ok() ? *loaded : Inputs{};
  EXPECT_EQ(inputs.workload.functions.size(), 12u);
  EXPECT_EQ(inputs.workload.requests.size(), 785u);
  SimOptions options;
  policy::GpuSpec gpu;
  gpu.memory_bytes = gpu_memory;
  gpu.link_bytes_per_us = 2'200;  // simcuda's swaps in the demo: ~2.2 GB/s
  options.gpus.assign(2, gpu);
  options.swap_out_copies = copies;
  policy::PolicyConfig config;
  config.swap_out_copies = copies && policy_knows;
  config.gpus = options.gpus;
  for (policy::GpuSpec& g : config.gpus) g.link_bytes_per_us = 24'000;  // what the arbiter says
  config.slice = 100'000;
  auto made = policy::Make(policy_name, config);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return Simulate(inputs.workload, options, **made);
}

// The demo's policy: few swaps, SLOs met but for the four berts' first requests (they start on
// the host here; in the live demo they start resident).
TEST(DemoScenario, DemoPolicyKeepsAStablePlacement) {
  const RunResult r = RunDemo("aggressive-no-scale-no-deep-evict");
  EXPECT_EQ(r.violations, 0u) << r.first_violation;
  EXPECT_EQ(r.memory_overcommits, 0u);
  EXPECT_EQ(r.completed, r.requests);
  EXPECT_GE(r.slo_attainment, 0.99);
  EXPECT_LT(r.swap_in_bytes, 15 * kGiB) << r.swap_ins << " swap-ins";
  EXPECT_LT(r.swap_ins, 80u);
}

// The project's default policy (parking and scale-down on) on the same node.
TEST(DemoScenario, DefaultPolicyMeetsTheSloToo) {
  const RunResult r = RunDemo("aggressive");
  EXPECT_EQ(r.violations, 0u) << r.first_violation;
  EXPECT_GE(r.slo_attainment, 0.99);
  EXPECT_LT(r.swap_in_bytes, 35 * kGiB) << r.swap_ins << " swap-ins";
}

// 1.35x overcommit (GPUs of 1.5 GiB: each holds one llm and one bert at most). The berts
// cannot afford a swap (154 ms against 150 ms SLOs) and stay pinned; the llms (3 s SLOs) take
// the swaps, and are not let in by evicting a pinned bert while they can still wait. Before
// that rule: 89.3% here, evicting pinned berts for llms.
TEST(DemoScenario, OvercommittedNodeSwapsTheFunctionsThatCanAffordIt) {
  const RunResult r = RunDemo("aggressive-no-scale-no-deep-evict", 1536ull << 20);
  EXPECT_EQ(r.violations, 0u) << r.first_violation;
  EXPECT_EQ(r.memory_overcommits, 0u);
  EXPECT_GE(r.slo_attainment, 0.98);
  EXPECT_LT(r.migrations, 20u);
}

// Evictions copy out first, as in the live demo (issue 6): every eviction is paid on the link
// and delays the swap-ins behind it. With the policy told so it keeps the demo's placement.
TEST(DemoScenario, CopyOutsChargedToTheLink) {
  const RunResult blind = RunDemo("aggressive-no-scale-no-deep-evict", 2 * kGiB, true, false);
  const RunResult told = RunDemo("aggressive-no-scale-no-deep-evict", 2 * kGiB, true, true);
  const RunResult free_out = RunDemo("aggressive-no-scale-no-deep-evict");
  for (const RunResult* r : {&blind, &told}) {
    EXPECT_EQ(r->violations, 0u) << r->first_violation;
    EXPECT_EQ(r->memory_overcommits, 0u);
    EXPECT_EQ(r->completed, r->requests);
  }
  RecordProperty("blind", std::to_string(blind.slo_attainment));
  RecordProperty("told", std::to_string(told.slo_attainment));
  std::printf("copies: blind %.4f (%lu evictions), told %.4f (%lu), free %.4f (%lu)\n",
              blind.slo_attainment, static_cast<unsigned long>(blind.evictions), told.slo_attainment,
              static_cast<unsigned long>(told.evictions), free_out.slo_attainment,
              static_cast<unsigned long>(free_out.evictions));
  EXPECT_GT(blind.swap_bytes, free_out.swap_bytes);  // the copy-outs are on the link
  EXPECT_GE(told.slo_attainment, 0.99);
  EXPECT_GE(told.slo_attainment, blind.slo_attainment);
}

TEST(DemoScenario, CopyOutsChargedOnAnOvercommittedNode) {
  const RunResult blind = RunDemo("aggressive-no-scale-no-deep-evict", 1536ull << 20, true, false);
  const RunResult told = RunDemo("aggressive-no-scale-no-deep-evict", 1536ull << 20, true, true);
  std::printf("copies 1.5 GiB: blind %.4f (%lu evictions), told %.4f (%lu)\n", blind.slo_attainment,
              static_cast<unsigned long>(blind.evictions), told.slo_attainment,
              static_cast<unsigned long>(told.evictions));
  EXPECT_EQ(told.violations, 0u) << told.first_violation;
  EXPECT_EQ(told.memory_overcommits, 0u);
  EXPECT_GE(told.slo_attainment, 0.97);
}

}  // namespace
}  // namespace gshare::sim
