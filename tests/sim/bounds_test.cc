// The workload's lower bounds of GPU time (bounds.h): the figures on hand-built workloads, and
// that no policy's GPU time is below them on a synthetic workload (the bound is a bound).
#include <gtest/gtest.h>

#include <string>

#include "gshare/sim/bounds.h"
#include "gshare/sim/inputs.h"
#include "gshare/sim/report.h"
#include "nlohmann/json.hpp"

namespace gshare::sim {
namespace {

constexpr uint64_t kMb = 1'000'000;

policy::GpuSpec Gpu() {
  policy::GpuSpec g;
  g.memory_bytes = 1000 * kMb;
  g.link_bytes_per_us = 1000.0;  // 1 MB per ms
  g.restore_overhead = 0;
  return g;
}

// One function (weights `mb` MB, 10 MB context), 10 requests of 10 ms, `every` apart.
SimWorkload Periodic(uint64_t mb, Duration slo, Duration every = 10 * policy::kUsPerSecond) {
  SimWorkload w;
  policy::FunctionSpec f;
  f.weights_bytes = mb * kMb;
  f.context_bytes = 10 * kMb;
  f.slo = slo;
  w.functions.push_back(f);
  for (int i = 0; i < 10; ++i) w.requests.push_back({i * every, 0, 10'000});
  return w;
}

TEST(Bounds, BusyTimeIsTheSumOfExecutions) {
  const WorkloadBounds b = ComputeBounds(Periodic(90, 50'000), Gpu());
  EXPECT_DOUBLE_EQ(b.busy_seconds, 0.1);
  EXPECT_GE(b.lower_bound_seconds, b.busy_seconds);
  EXPECT_GE(b.lower_bound_seconds, b.memory_seconds);
}

// A 490 MB function restores in 500 ms and swaps its weights in 490 ms; with a 100 ms SLO and
// a request every 300 ms, neither fits in the 200 ms from one deadline to the next arrival plus
// the 90 ms of slack, so it stays resident in between.
TEST(Bounds, FunctionThatCannotBeSwappedInTimeIsHeldBetweenRequests) {
  const WorkloadBounds b = ComputeBounds(Periodic(490, 100'000, 300'000), Gpu());
  EXPECT_EQ(b.unswappable_functions, 1u);
  const double fp = 500 * kMb, per_gpu = 1000.0 * kMb * 1e6;
  const double hold = 9 * fp * 200'000;                    // 9 gaps of 300 ms less the SLO
  const double rest = fp * 500'000 + 10 * fp * 10'000;     // the first restore, 10 executions
  EXPECT_NEAR(b.hold_seconds, hold / per_gpu, 1e-9);
  EXPECT_NEAR(b.memory_seconds, (hold + rest) / per_gpu, 1e-9);
  EXPECT_NEAR(b.lower_bound_seconds, b.memory_seconds, 1e-12);  // 1.2 s against 0.1 s busy
}

// With requests 10 s apart the same function can be restored ahead of each one (the bound is
// clairvoyant: it may prefetch), so each gap costs only the restore's footprint-time.
TEST(Bounds, FunctionRestoredAheadCostsOnlyItsLoads) {
  const WorkloadBounds b = ComputeBounds(Periodic(490, 100'000), Gpu());
  EXPECT_NEAR(b.hold_seconds, 9 * 500.0 * kMb * 500'000 / (1000.0 * kMb * 1e6), 1e-9);
}

// Parking is cheapest when only the weights' swap-in fits: a 100 MB context and 400 MB of
// weights (swap-in 400 ms, restore 500 ms), SLO 60 ms, a request every 480 ms: 420 ms from a
// deadline to the next arrival, 50 ms of slack.
TEST(Bounds, ParkingHoldsOnlyTheContext) {
  SimWorkload w = Periodic(400, 60'000, 480'000);
  w.functions[0].context_bytes = 100 * kMb;
  const WorkloadBounds b = ComputeBounds(w, Gpu());
  const double per_gap = 100.0 * kMb * (420'000 - 400'000) + 500.0 * kMb * 400'000;
  EXPECT_NEAR(b.hold_seconds, 9 * per_gap / (1000.0 * kMb * 1e6), 1e-9);
}

TEST(Bounds, NoPolicyUsesLessGpuTime) {
  InputOptions in;
  in.synthetic = true;
  in.functions = 20;
  in.duration_s = 300;
  in.rate_scale = 5;
  const SimWorkload w = LoadInputs(in)->workload;
  SimOptions o;
  o.gpus.assign(8, policy::GpuSpec{});
  policy::PolicyConfig c;
  c.gpus = o.gpus;
  const WorkloadBounds b = ComputeBounds(w, o.gpus[0]);
  EXPECT_GT(b.lower_bound_seconds, 0);
  std::vector<RunResult> runs;
  for (const std::string& name : policy::PolicyNames()) {
    runs.push_back(Simulate(w, o, *policy::Make(name, c).value()));
    EXPECT_GE(runs.back().gpu_seconds, b.lower_bound_seconds) << name;
    EXPECT_NEAR(runs.back().busy_seconds, b.busy_seconds, 1e-6) << name;
  }
  const auto j = nlohmann::json::parse(FormatJson(runs, "test", &b));
  EXPECT_DOUBLE_EQ(j["bounds"]["lower_bound_gpu_seconds"].get<double>(), b.lower_bound_seconds);
  for (const auto& run : j["runs"]) {
    for (const char* key : {"ceiling_gap_points", "busy_share", "lower_bound_gpu_seconds",
                            "gpu_time_over_bound"}) {
      EXPECT_TRUE(run.contains(key)) << key;
    }
    EXPECT_GE(run["gpu_time_over_bound"].get<double>(), 1.0);
    EXPECT_LE(run["ceiling_gap_points"].get<double>(), 1e-9);
  }
  EXPECT_NE(FormatLimits(runs, b).find("x bound"), std::string::npos);
}

}  // namespace
}  // namespace gshare::sim
