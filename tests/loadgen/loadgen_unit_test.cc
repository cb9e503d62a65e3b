// Unit tests of gshare-loadgen's pieces: target URLs and the loopback rule, TOML targets,
// fixed-rate and trace plans with their bounds, the report's statistics and JSON, and the check
// of an answer (its outcome, error code and message).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gshare/loadgen/plan.h"
#include "gshare/loadgen/report.h"
#include "gshare/loadgen/runner.h"
#include "gshare/loadgen/targets.h"

namespace gshare::loadgen {
namespace {

std::string TempFile(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/gshare-loadgen-test-" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Targets, AcceptsLoopbackUrlsOnly) {
  auto t = ParseTargetUrl("http://127.0.0.1:8001/v2/models/cnn");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->host, "127.0.0.1");
  EXPECT_EQ(t->port, 8001);
  EXPECT_EQ(t->model, "cnn");
  EXPECT_TRUE(ParseTargetUrl("http://localhost/v2/models/x").ok());
  EXPECT_TRUE(ParseTargetUrl("http://127.1.2.3:9/v2/models/x").ok());
  EXPECT_TRUE(ParseTargetUrl("http://[::1]:9/v2/models/x").ok());
  for (const char* bad : {"http://10.0.0.1:80/v2/models/x", "http://example.com/v2/models/x",
                          "http://0.0.0.0:80/v2/models/x", "http://[::]:80/v2/models/x"}) {
    auto r = ParseTargetUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("not a loopback address"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(ParseTargetUrl("https://127.0.0.1/v2/models/x").ok());
  EXPECT_FALSE(ParseTargetUrl("http://127.0.0.1:99999/v2/models/x").ok());
  EXPECT_FALSE(ParseTargetUrl("http://127.0.0.1:80/v2/models/").ok());
  EXPECT_FALSE(ParseTargetUrl("http://127.0.0.1:80/v1/x").ok());
}

TEST(Targets, FlagNamesAndSlo) {
  auto t = ParseTargetFlag("fast=http://127.0.0.1:8001/v2/models/cnn@25");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->name, "fast");
  EXPECT_EQ(t->slo_ms, 25);
  auto plain = ParseTargetFlag("http://127.0.0.1:8001/v2/models/cnn");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->name, "cnn");
  EXPECT_EQ(plain->slo_ms, 0);
  EXPECT_FALSE(ParseTargetFlag("x=http://127.0.0.1:8001/v2/models/cnn@-3").ok());
}

TEST(Targets, TomlFile) {
  const std::string ok = TempFile("ok.toml", R"(slo_ms = 40
[[target]]
name = "a"
url = "http://127.0.0.1:9001/v2/models/cnn"
[[target]]
url = "http://127.0.0.1:9002/v2/models/bert"
slo_ms = 70
)");
  auto t = LoadTargetsToml(ok);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].name, "a");
  EXPECT_EQ((*t)[0].slo_ms, 40);
  EXPECT_EQ((*t)[1].name, "bert");
  EXPECT_EQ((*t)[1].slo_ms, 70);
  const std::string remote = TempFile("remote.toml", "[[target]]\nurl = \"http://192.168.1.5:80/v2/models/x\"\n");
  auto r = LoadTargetsToml(remote);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("remote.toml:1"), std::string::npos) << r.status().message();
  const std::string typo = TempFile("typo.toml", "[[target]]\nurl = \"http://127.0.0.1/v2/models/x\"\nslo = 3\n");
  EXPECT_FALSE(LoadTargetsToml(typo).ok());
  EXPECT_FALSE(LoadTargetsToml(TempFile("syntax.toml", "[[target]\n")).ok());
  for (const char* f : {"ok.toml", "remote.toml", "typo.toml", "syntax.toml"}) {
    std::remove(("/tmp/gshare-loadgen-test-" + std::to_string(getpid()) + "-" + f).c_str());
  }
}

TEST(Plans, FixedRateIsEvenRoundRobinAndBounded) {
  FixedRateOptions o;
  o.rate_per_s = 100;
  o.duration_s = 2;
  auto p = FixedRatePlan(o, 3, {});
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->arrivals.size(), 200u);
  EXPECT_EQ(p->arrivals[1].at_us, 10000);
  EXPECT_EQ(p->arrivals[4].target, 1u);
  EXPECT_EQ(FixedRatePlan(o, 3, {50, 0})->arrivals.size(), 50u);
  FixedRateOptions nine = o;  // 9/s for 2 s: 18 arrivals, not 19 from rounding creep
  nine.rate_per_s = 9;
  EXPECT_EQ(FixedRatePlan(nine, 1, {})->arrivals.size(), 18u);
  EXPECT_EQ(FixedRatePlan(o, 3, {0, 0.5})->arrivals.size(), 51u);  // 0 .. 0.5 s inclusive
  o.poisson = true;
  auto q = FixedRatePlan(o, 3, {});
  ASSERT_TRUE(q.ok());
  EXPECT_GT(q->arrivals.size(), 140u);
  EXPECT_LT(q->arrivals.size(), 260u);
  o.rate_per_s = 0;
  EXPECT_FALSE(FixedRatePlan(o, 3, {}).ok());
}

TEST(Plans, TraceMapsFunctionsByNameOrRoundRobin) {
  const std::string csv = TempFile("trace.csv", "timestamp_ms,function\n1000,b\n1500,a\n2000,b\n9000,a\n");
  workload::SourceOptions s;
  s.format = "csv";
  s.path = csv;
  s.parse.time_compression = 2;
  auto p = TracePlan(s, {"a", "b"}, 4, {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->arrivals.size(), 4u);
  EXPECT_EQ(p->arrivals[0].at_us, 0);        // rebased to the first arrival
  EXPECT_EQ(p->arrivals[1].at_us, 250000);   // (1500 - 1000) ms / 2
  EXPECT_EQ(p->arrivals[0].target, 1u);      // "b" by name
  EXPECT_EQ(p->arrivals[1].target, 0u);
  auto rr = TracePlan(s, {"x", "y", "z"}, 4, {0, 1.0});
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(rr->arrivals.size(), 3u);        // the 4 s arrival is past --max-seconds
  EXPECT_NE(rr->description.find("round-robin"), std::string::npos);
  s.path = "/nonexistent/trace.csv";
  EXPECT_FALSE(TracePlan(s, {"a"}, 4, {}).ok());
  s.format = "bogus";
  EXPECT_FALSE(TracePlan(s, {"a"}, 4, {}).ok());
  std::remove(csv.c_str());
}

TEST(Plans, AzureLlmTraceCarriesTokens) {
  workload::SourceOptions s;
  s.format = "azure-llm";
  s.functions = 4;
  s.parse.max_requests = 50;
  auto p = TracePlan(s, {"a", "b", "c", "d"}, 4, {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->arrivals.size(), 50u);
  EXPECT_GT(p->arrivals[0].input_tokens, 0);
  EXPECT_GT(p->arrivals[0].output_tokens, 0);
}

TEST(Report, PercentilesSloAndJson) {
  std::vector<TargetInfo> targets(2);
  targets[0].target.name = "a";
  targets[1].target.name = "b";
  RunResult run;
  run.wall_s = 2;
  for (int i = 1; i <= 100; ++i) run.records.push_back({0, 0, static_cast<double>(i), Outcome::kOk});
  run.records.push_back({1, 0, 5, Outcome::kOk});
  run.records.push_back({1, 0, 5, Outcome::kWrongDigest});
  run.records.push_back({1, 0, 5, Outcome::kTransport});
  const auto s = Summarize(targets, {50, 10}, run);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].p50_ms, 50);
  EXPECT_EQ(s[0].p99_ms, 99);
  EXPECT_DOUBLE_EQ(s[0].slo_attainment, 0.5);
  EXPECT_EQ(s[1].errors, 2u);
  EXPECT_EQ(s[1].wrong, 1u);
  EXPECT_NEAR(s[1].slo_attainment, 1.0 / 3, 1e-12);
  EXPECT_EQ(s[2].requests, 103u);
  EXPECT_DOUBLE_EQ(s[2].throughput_rps, 101.0 / 2);
  const auto j = nlohmann::json::parse(FormatJson("label", "desc", s, run));
  const auto& r = j["runs"][0];
  for (const char* key : {"policy", "requests", "slo_attainment", "p50_ms", "p99_ms", "gpu_seconds",
                          "peak_gpus", "swap_bytes", "cost_usd", "errors", "targets"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  EXPECT_EQ(r["policy"], "label");
  EXPECT_EQ(r["errors_by_kind"]["wrong_digest"], 1);
  EXPECT_EQ(r["targets"].size(), 2u);
  EXPECT_NE(FormatTable(s).find("all"), std::string::npos);
}

TEST(Report, RecordsCsvHasOneLinePerRequest) {
  std::vector<TargetInfo> targets(2);
  targets[0].target.name = "a";
  targets[1].target.name = "b";
  RunResult run;
  run.records.push_back({1, 2500, 7.25, Outcome::kOk});
  run.records.push_back({0, 0, 30, Outcome::kSkipped});
  EXPECT_EQ(FormatRecordsCsv(targets, run),
            "target,scheduled_ms,latency_ms,outcome\n"
            "b,2.500,7.250,ok\n"
            "a,0.000,30.000,skipped\n");
}

// Each wrong answer is its outcome with an error: kRefused for an HTTP status, kMalformed for
// what the server should not have sent; a right one is kOk with its outputs' fingerprint.
TEST(CheckAnswer, OutcomesCarryTheirErrorCodeAndMessage) {
  const std::string good =
      R"({"outputs":[{"name":"digest","data":["abc"]},{"name":"y","data":[1]}]})";
  const CheckedAnswer ok = CheckAnswer(200, good, "abc");
  EXPECT_EQ(ok.outcome, Outcome::kOk);
  EXPECT_TRUE(ok.error.ok());
  EXPECT_EQ(ok.fingerprint, R"({"data":[1],"name":"y"})");
  const struct {
    int status;
    std::string body;
    Outcome outcome;
    StatusCode code;
    std::string message;
  } cases[] = {
      {503, "busy", Outcome::kHttpError, StatusCode::kRefused, "HTTP 503: busy"},
      {200, "[1]", Outcome::kBadResponse, StatusCode::kMalformed,
       "response is not an inference response: [1]"},
      {200, R"({"outputs":[]})", Outcome::kBadResponse, StatusCode::kMalformed,
       "response has no digest output"},
      {200, good, Outcome::kWrongDigest, StatusCode::kMalformed,
       "digest abc does not match the request's def"},
  };
  for (const auto& c : cases) {
    const CheckedAnswer a = CheckAnswer(c.status, c.body, "def");
    EXPECT_EQ(a.outcome, c.outcome) << c.message;
    EXPECT_EQ(a.error.code(), c.code) << c.message;
    EXPECT_EQ(a.error.message(), c.message);
  }
}

}  // namespace
}  // namespace gshare::loadgen
