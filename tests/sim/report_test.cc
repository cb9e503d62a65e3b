// gshare-sim's outputs: the JSON report's keys, the SVG plots, the --exact grading, and the
// command line end to end (exit status, JSON written).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gshare/sim/exact_report.h"
#include "gshare/sim/inputs.h"
#include "gshare/sim/report.h"
#include "nlohmann/json.hpp"

namespace gshare::sim {
namespace {

class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("gshare-sim-report-" + std::to_string(getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

SimWorkload Small() {
  InputOptions in;
  in.synthetic = true;
  in.functions = 20;
  in.duration_s = 300;
  in.rate_scale = 5;
  return LoadInputs(in)->workload;
}

std::vector<RunResult> RunAll(const SimWorkload& w) {
  SimOptions o;
  o.gpus.assign(8, policy::GpuSpec{});
  policy::PolicyConfig c;
  c.gpus = o.gpus;
  std::vector<RunResult> runs;
  for (const std::string& name : policy::PolicyNames()) {
    runs.push_back(Simulate(w, o, *policy::Make(name, c).value()));
  }
  return runs;
}

TEST(Report, JsonHasTheIssuesKeysPerPolicy) {
  const auto runs = RunAll(Small());
  const auto j = nlohmann::json::parse(FormatJson(runs, "test"));
  ASSERT_EQ(j["runs"].size(), policy::PolicyNames().size());
  for (const auto& run : j["runs"]) {
    for (const char* key : {"policy", "requests", "slo_attainment", "p50_ms", "p99_ms",
                            "gpu_seconds", "peak_gpus", "swap_bytes", "cost_usd"}) {
      EXPECT_TRUE(run.contains(key)) << key;
    }
    EXPECT_GT(run["requests"].get<int>(), 0);
  }
  EXPECT_NE(FormatTable(runs).find("aggressive"), std::string::npos);
}

TEST(Report, PlotsAreSvg) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  TempDir dir;
  const auto runs = RunAll(Small());
  ASSERT_EQ(WritePlots(runs, dir.path().string()), "");
  for (const char* name : {"gpus.svg", "latency_cdf.svg"}) {
    std::ifstream f(dir.path() / name);
    std::stringstream s;
    s << f.rdbuf();
    EXPECT_NE(s.str().find("<svg"), std::string::npos) << name;
  }
}

TEST(Report, ExactGradingProducesRatiosAndSolveTimes) {
  SimOptions o;
  o.gpus.assign(2, policy::GpuSpec{});
  ExactOptions e;
  e.instances = 2;
  e.requests = 4;
  std::string solver;
  const auto rows = GradeAgainstExact(Small(), o, {"keepalive", "aggressive"}, e, &solver);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(solver.empty());
  for (const ExactRow& r : rows) {
    EXPECT_GT(r.instances, 0) << r.policy;
    EXPECT_GT(r.efficiency_ratio, 0) << r.policy;
    EXPECT_LE(r.efficiency_ratio, 1.0 + 1e-9) << r.policy << ": better than the optimum?";
    EXPECT_LE(r.efficiency_ratio_tail, r.efficiency_ratio + 1e-9) << r.policy;
    EXPECT_LE(r.gpu_ratio, 1.0 + 1e-9) << r.policy << ": less GPU time than the optimum?";
    EXPECT_EQ(r.opt_served, e.requests) << "serve_all: the optimum serves every request";
    EXPECT_GE(r.gpus, e.gpus);
    EXPECT_GT(r.solve_seconds, 0);
  }
  // Random windows: graded too, reproducibly for a seed.
  e.random_windows = true;
  const auto random = GradeAgainstExact(Small(), o, {"aggressive"}, e, &solver);
  const auto again = GradeAgainstExact(Small(), o, {"aggressive"}, e, &solver);
  ASSERT_EQ(random.size(), 1u);
  EXPECT_GT(random[0].instances, 0);
  EXPECT_DOUBLE_EQ(random[0].efficiency_ratio, again[0].efficiency_ratio);
}

TEST(Cli, RunsAndWritesJson) {
  TempDir dir;
  const auto json = dir.path() / "out.json";
  const std::string cmd = std::string(GSHARE_SIM_BIN) +
                          " --synthetic --functions 15 --duration 120 --gpus 4 "
                          "--policy keepalive,aggressive --quiet --json " + json.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(json);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["policy"], "aggressive");
}

// Issue 21: the limits in the JSON, and --nodes end to end (one row per policy and score).
TEST(Cli, WritesTheLimitsAndRunsSeveralNodes) {
  TempDir dir;
  const auto json = dir.path() / "cluster.json";
  const std::string cmd = std::string(GSHARE_SIM_BIN) +
                          " --synthetic --functions 15 --duration 120 --gpus 2 --nodes 3 "
                          "--node-score least-allocated,gshare --policy keepalive,aggressive "
                          "--quiet --json " + json.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(json);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["nodes"], 3);
  ASSERT_EQ(j["cluster"].size(), 4u);
  EXPECT_EQ(j["cluster"][0]["score"], "least-allocated");
  EXPECT_EQ(j["cluster"][3]["score"], "gshare");
  EXPECT_EQ(j["cluster"][3]["policy"], "aggressive");
  EXPECT_GT(j["bounds"]["lower_bound_gpu_seconds"].get<double>(), 0.0);
  for (const auto& run : j["cluster"]) {
    EXPECT_GE(run["gpu_time_over_bound"].get<double>(), 1.0);
    EXPECT_LE(run["nodes_used"].get<int>(), 3);
  }
  const std::string bad = std::string(GSHARE_SIM_BIN) +
                          " --synthetic --functions 5 --duration 10 --nodes 2 --node-score nope "
                          "--quiet 2>/dev/null";
  EXPECT_NE(std::system(bad.c_str()), 0);
}

TEST(Cli, RejectsAnUnknownPolicy) {
  const std::string cmd = std::string(GSHARE_SIM_BIN) +
                          " --synthetic --functions 5 --duration 10 --policy nope --quiet 2>/dev/null";
  EXPECT_NE(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace gshare::sim
