// Unit tests of gshare-demo's library: GPU occupancy/busy/swap accounting over synthetic
// arbiter event records, the function mix, the loadgen records CSV, child processes (exit
// status, SIGTERM then SIGKILL) and the report's ratio and JSON shape.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "gshare/demo/child_process.h"
#include "gshare/demo/functions.h"
#include "gshare/demo/gpu_usage.h"
#include "gshare/demo/latencies.h"
#include "gshare/demo/options.h"
#include "gshare/demo/report.h"

namespace gshare::demo {
namespace {

using shm::Event;
using shm::EventType;

constexpr uint64_t kS = 1000000000ull;

Event E(uint64_t t_s10, EventType type, uint32_t client, uint32_t gpu, uint64_t a0 = 0,
        uint64_t a1 = 0, uint64_t a2 = 0) {
  Event e;
  e.timestamp_ns = t_s10 * kS / 10;  // tenths of a second
  e.type = type;
  e.client_id = client;
  e.gpu = gpu;
  e.args = {a0, a1, a2, 0};
  return e;
}

TEST(GpuUsage, OccupancyBusyAndSwapsWithinTheWindow) {
  // Window [1 s, 11 s). Client 1 on GPU 0 from 0 s; client 2 on GPU 1 from 2 s, swapped out at
  // 4 s (GPU 1 empty from then), back in at 6 s, gone at 9 s. Client 1 holds GPU 0's token
  // 3..5 s. Peak: both GPUs occupied.
  const std::vector<Event> events = {
      E(0, EventType::kRegister, 1, 0, 100),
      E(20, EventType::kRegister, 2, 1, 200),
      E(30, EventType::kGrant, 1, 0, 1),
      E(35, EventType::kSwapOutBegin, 2, 1, 1, 200),
      E(40, EventType::kSwapOutEnd, 2, 1, 1, 200, kS / 2),
      E(50, EventType::kYield, 1, 0, 1),
      E(60, EventType::kSwapInBegin, 2, 1, 2, 200),
      E(61, EventType::kSwapInEnd, 2, 1, 2, 200, kS / 4),
      E(90, EventType::kUnregister, 2, shm::kNoGpu, 0),
      E(120, EventType::kUnregister, 1, shm::kNoGpu, 0),  // after the window
  };
  const GpuUsage u = AccountGpuUsage(events, 1 * kS, 11 * kS);
  ASSERT_EQ(u.gpus.size(), 2u);
  EXPECT_NEAR(u.window_s, 10, 1e-9);
  EXPECT_NEAR(u.gpus[0].occupied_s, 10, 1e-9);     // 1..11
  EXPECT_NEAR(u.gpus[1].occupied_s, 2 + 3, 1e-9);  // 2..4 and 6..9
  EXPECT_NEAR(u.occupied_gpu_seconds, 15, 1e-9);
  EXPECT_NEAR(u.gpus[0].busy_s, 2, 1e-9);
  EXPECT_NEAR(u.busy_gpu_seconds, 2, 1e-9);
  EXPECT_EQ(u.peak_gpus, 2u);
  EXPECT_EQ(u.functions, 2u);
  EXPECT_EQ(u.swap_outs, 1u);
  EXPECT_EQ(u.swap_ins, 1u);
  EXPECT_EQ(u.swap_out_bytes, 200u);
  EXPECT_NEAR(u.swap_out_s, 0.5, 1e-9);
  EXPECT_NEAR(u.swap_in_s, 0.25, 1e-9);
  EXPECT_EQ(u.grants, 1u);
}

TEST(GpuUsage, EventsBeforeTheWindowSetItsStartAndFailedSwapOutsKeepResidency) {
  const std::vector<Event> events = {
      E(0, EventType::kRegister, 1, 0),
      E(5, EventType::kSwapOutEnd, 1, 0, 1, 0, 0),  // failed: nothing moved, stays resident
      E(8, EventType::kCheckpoint, 1, 0, 0, 0),     // checkpointed: off the GPU
      E(30, EventType::kCheckpoint, 1, 0, 1, 0),    // restored
  };
  const GpuUsage u = AccountGpuUsage(events, 1 * kS, 4 * kS);
  ASSERT_EQ(u.gpus.size(), 1u);
  EXPECT_NEAR(u.gpus[0].occupied_s, 1, 1e-9);  // 3..4 s, after the restore
  EXPECT_EQ(u.swap_outs, 0u);
  EXPECT_EQ(u.peak_gpus, 1u);
}

TEST(GpuUsage, NoEventsNoOccupancy) {
  const GpuUsage u = AccountGpuUsage({}, 0, 5 * kS);
  EXPECT_EQ(u.occupied_gpu_seconds, 0);
  EXPECT_EQ(u.peak_gpus, 0u);
}

TEST(Functions, MixExpandsInterleavingKindsWithSettings) {
  auto f = BuildFunctions("llm=1,cnn=2", "cnn=96MiB,llm=1GiB,bert=1MiB", "cnn=300,llm=2500.5");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->size(), 3u);
  EXPECT_EQ((*f)[0].name, "cnn-0");
  EXPECT_EQ((*f)[1].name, "llm-0");
  EXPECT_EQ((*f)[2].name, "cnn-1");
  EXPECT_EQ((*f)[2].seed, 2u);
  EXPECT_EQ((*f)[2].quota_bytes, 96u << 20);
  EXPECT_EQ((*f)[1].quota_bytes, 1u << 30);
  EXPECT_EQ((*f)[1].slo_ms, 2500.5);
  const std::string toml = TargetsToml(*f, {1, 2, 3});
  EXPECT_NE(toml.find("url = \"http://127.0.0.1:2/v2/models/llm-0\"\nslo_ms = 2500.5"), std::string::npos) << toml;
}

TEST(Functions, BadMixesAreRefusedWithTheReason) {
  EXPECT_NE(BuildFunctions("gpt=1", "gpt=1GiB", "gpt=1").status().message().find("unknown kind 'gpt'"), std::string::npos);
  EXPECT_NE(BuildFunctions("cnn=1", "bert=1GiB", "cnn=1").status().message().find("needs a --quota"), std::string::npos);
  EXPECT_NE(BuildFunctions("cnn=x", "cnn=1GiB", "cnn=1").status().message().find("not a count"), std::string::npos);
  EXPECT_NE(BuildFunctions("cnn=1", "cnn=lots", "cnn=1").status().message().find("--quota"), std::string::npos);
  EXPECT_NE(BuildFunctions("cnn=1", "cnn=1MiB", "cnn=0").status().message().find("--slo"), std::string::npos);
  EXPECT_NE(BuildFunctions("cnn=1,cnn=2", "cnn=1MiB", "cnn=1").status().message().find("twice"), std::string::npos);
  EXPECT_FALSE(BuildFunctions("cnn=0", "cnn=1MiB", "cnn=1").ok());
}

TEST(Latencies, RecordsCsvAndPerKindStats) {
  auto r = ParseRecordsCsv(
      "target,scheduled_ms,latency_ms,outcome\n"
      "cnn-0,0.000,10.000,ok\ncnn-1,1.000,30.000,ok\ncnn-0,2.000,5.000,wrong_digest\n"
      "llm-0,3.000,900.000,ok\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 4u);
  auto f = BuildFunctions("cnn=2,llm=1", "cnn=1MiB,llm=1MiB", "cnn=20,llm=1000");
  ASSERT_TRUE(f.ok());
  const auto k = StatsByKind(*f, *r);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].kind, "cnn");
  EXPECT_EQ(k[0].requests, 3u);
  EXPECT_EQ(k[0].ok, 2u);
  EXPECT_NEAR(k[0].slo_attainment, 1.0 / 3, 1e-12);  // 10 ms met; 30 ms missed; error missed
  EXPECT_EQ(k[0].p50_ms, 10);
  EXPECT_EQ(k[0].p99_ms, 30);
  EXPECT_EQ(k[1].slo_attainment, 1);
  EXPECT_EQ(SortedOkLatencies(*r), (std::vector<double>{10, 30, 900}));
  EXPECT_FALSE(ParseRecordsCsv("nope\n").ok());
  EXPECT_FALSE(ParseRecordsCsv("target,scheduled_ms,latency_ms,outcome\na,b\n").ok());
}

TEST(ChildProcess, ExitStatusAndStopEscalatesToSigkill) {
  auto ok = ChildProcess::Spawn({{"/bin/sh", "-c", "exit 3"}, CurrentEnvironment(), "", ""});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->Wait(std::chrono::seconds(30)), 3);
  // Ignores SIGTERM: Stop must escalate to SIGKILL after the grace period.
  auto stubborn = ChildProcess::Spawn(
      {{"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}, CurrentEnvironment(), "", ""});
  ASSERT_TRUE(stubborn.ok());
  EXPECT_TRUE(stubborn->Running());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the trap be installed
  EXPECT_EQ(stubborn->Stop(std::chrono::milliseconds(300)), 128 + SIGKILL);
  EXPECT_FALSE(ChildProcess::Spawn({{"/nonexistent/program"}, CurrentEnvironment(), "", ""}).ok());
}

TEST(ChildProcess, EnvironmentAndOutputReachTheChild) {
  char dir[] = "/tmp/gshare-demo-unit-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string out = std::string(dir) + "/out";
  std::vector<std::string> env = CurrentEnvironment();
  SetEnv(env, "DEMO_TEST_VALUE", "first");
  SetEnv(env, "DEMO_TEST_VALUE", "second");
  auto c = ChildProcess::Spawn({{"/bin/sh", "-c", "echo \"$DEMO_TEST_VALUE\""}, env, out, ""});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->Wait(std::chrono::seconds(30)), 0);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "second");
  unlink(out.c_str());
  rmdir(dir);
}

TEST(Report, RatioAndRunsFormat) {
  DemoReport r;
  auto f = BuildFunctions("cnn=4", "cnn=1MiB", "cnn=10");
  ASSERT_TRUE(f.ok());
  r.functions = *f;
  r.gshare.label = "gshare";
  r.gshare.window_s = 10;
  r.gshare.gpu_seconds = 8;
  r.gshare.run = {{"requests", 5}, {"errors", 0}, {"slo_attainment", 1.0}};
  RunOutcome d;
  d.label = "dedicated";
  d.window_s = 10;
  d.gpu_seconds = 40;
  d.run = {{"requests", 5}, {"errors", 2}};
  r.dedicated = d;
  EXPECT_DOUBLE_EQ(GpuSecondsRatio(r), 8.0 / 40);
  EXPECT_EQ(TotalErrors(r), 2u);
  const nlohmann::json j = ReportJson(r);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["policy"], "gshare");
  EXPECT_EQ(j["runs"][1]["policy"], "dedicated");
  EXPECT_EQ(j["runs"][1]["gpu_seconds"], 40.0);
  EXPECT_TRUE(j.contains("swaps"));
  EXPECT_NE(ReportText(r).find("= 20.0%"), std::string::npos) << ReportText(r);
}

TEST(Options, RealGpuSlosAndQuickArbiterGpuSmallerThanTheQuotas) {
  DemoOptions o;
  ApplyRealGpu(o);
  EXPECT_EQ(o.slos_ms, "cnn=100,bert=100,llm=1000");
  EXPECT_EQ(o.gpu_memory, "2GiB");  // the full demo keeps its GPU size
  DemoOptions q;
  q.quick = true;
  ApplyQuick(q);
  ApplyRealGpu(q);
  auto f = BuildFunctions(q.mix, q.quotas, q.slos_ms);
  ASSERT_TRUE(f.ok());
  uint64_t quotas = 0;
  for (const auto& fn : *f) quotas += fn.quota_bytes;
  EXPECT_EQ(q.gpu_memory, "1536MiB");
  EXPECT_GT(quotas, 1536ull << 20);  // one real GPU is overcommitted
}

TEST(Report, BaselineOnFewerGpusThanFunctionsIsSaid) {
  DemoReport r;
  auto f = BuildFunctions("cnn=2", "cnn=1MiB", "cnn=10");
  ASSERT_TRUE(f.ok());
  r.functions = *f;
  r.gshare.run = {{"requests", 1}};
  RunOutcome d;
  d.gpus = 1;
  d.description = "2 functions round-robin over 1 real GPUs";
  r.dedicated = d;
  EXPECT_NE(ReportText(r).find("note: baseline = 2 functions round-robin"), std::string::npos);
  r.dedicated->gpus = 2;
  EXPECT_EQ(ReportText(r).find("note: baseline"), std::string::npos);
}

}  // namespace
}  // namespace gshare::demo
