// gshare-demo end to end, shortened (--quick): a real gshare-arbiter and six preloaded sample
// servers on two simulated GPUs, a short Azure LLM trace replay, then the dedicated baseline.
// Checks through the JSON report: both runs present with the same load, every request answered
// correctly (no errors, no wrong results), an SLO-attainment floor, the GPU accounting and the
// swap counts consistent with the arbiter's own summary, and a clean shutdown (no problems).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "demo_test_util.h"
#include "gshare/demo/child_process.h"

// An ASan or TSan build (GCC's macros; clang's __has_feature).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GSHARE_DEMO_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GSHARE_DEMO_TEST_SANITIZED 1
#endif
#endif

namespace gshare::demo {
namespace {

using test_util::ReadFile;
using test_util::Scaled;

TEST(DemoEndToEnd, QuickDemoAnswersEveryRequestAndReportsBothRuns) {
  const std::string dir = "/tmp/gshare-demo-e2e-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  const std::string json = dir + "/out.json";
  std::filesystem::create_directories(dir);
  auto demo = ChildProcess::Spawn({{DEMO_BIN, "--quick", "--run-dir", dir + "/run", "--json", json},
                                   CurrentEnvironment(), dir + "/stdout", dir + "/stderr"});
  ASSERT_TRUE(demo.ok()) << demo.status().message();
  const auto status = demo->Wait(Scaled(std::chrono::seconds(280)));
  if (!status) demo->Stop(std::chrono::seconds(10));
  const std::string printed = ReadFile(dir + "/stdout");
  const std::string log = ReadFile(dir + "/stderr");
  ASSERT_TRUE(status.has_value()) << "gshare-demo did not finish\n" << log;
  EXPECT_EQ(*status, 0) << printed << log;
  EXPECT_NE(printed.find("GPU-seconds held: gshare"), std::string::npos) << printed;

  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "no JSON report\n" << printed << log;
  ASSERT_EQ(j["runs"].size(), 2u) << j.dump(2);
  const auto& g = j["runs"][0];
  const auto& d = j["runs"][1];
  EXPECT_EQ(g["policy"], "gshare");
  EXPECT_EQ(d["policy"], "dedicated");
  for (const auto* run : {&g, &d}) {
    EXPECT_GT((*run)["requests"].get<int>(), 20) << run->dump(2);
    EXPECT_EQ((*run)["errors"], 0) << run->dump(2);
    EXPECT_EQ((*run)["wrong_results"], 0) << run->dump(2);
    EXPECT_EQ((*run)["completed"], (*run)["requests"]);
    EXPECT_TRUE((*run)["problems"].empty()) << run->dump(2);
  }
  EXPECT_EQ(g["requests"], d["requests"]);  // the same load on both
  // SLO floors. On simcuda every kernel runs on the CPU, so attainment measures the machine's
  // load as much as gshare: on the shared 2-core machine at load 14-25 the *dedicated* run of
  // this quick demo met 82% (gshare 83%). So gshare must meet 0.8, or come within 5 points of
  // the dedicated run of the same invocation (what sharing adds on this machine); the
  // dedicated run must show the samples work (0.5). The 99% target is measured by the full
  // demo on a quiet machine (docs/demo.md).
  // Not in sanitizer builds: the instrumented samples' CPU kernels run several times slower
  // there, so attainment measures the instrumentation (ASan, 2026-11-30: gshare 44%, dedicated
  // 64%, zero errors); every request must still be answered right (above).
#ifndef GSHARE_DEMO_TEST_SANITIZED
  const double ga = g["slo_attainment"].get<double>(), da = d["slo_attainment"].get<double>();
  EXPECT_TRUE(ga >= 0.8 || ga >= da - 0.05) << "gshare " << ga << " dedicated " << da << "\n"
                                             << g.dump(2);
  EXPECT_GE(da, 0.5) << d.dump(2);
#endif
  // 6 functions on 2 GPUs: gshare holds at most the 2 GPUs for the window.
  EXPECT_EQ(g["gpus"], 2);
  EXPECT_LE(g["peak_gpus"].get<int>(), 2);
  EXPECT_GT(g["gpu_seconds"].get<double>(), 0);
  EXPECT_LE(g["gpu_seconds"].get<double>(), 2 * g["window_s"].get<double>() + 1e-6);
  EXPECT_EQ(d["peak_gpus"], 6);
  EXPECT_LE(j["gpu_seconds_ratio"].get<double>(), 0.4);
  // The ring's completed swaps within the window cannot exceed the arbiter's issued ones.
  const auto& s = j["swaps"];
  const auto& a = j["arbiter_summary"];
  EXPECT_LE(s["swap_outs"].get<uint64_t>(), a["swap_outs"].get<uint64_t>());
  EXPECT_LE(s["swap_ins"].get<uint64_t>(), a["swap_ins"].get<uint64_t>());
  EXPECT_EQ(a["registrations"], 6) << a.dump(2);
  EXPECT_TRUE(std::filesystem::exists(j["files"]["plot"].get<std::string>()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gshare::demo
