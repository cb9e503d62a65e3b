// gshare-loadgen as a real program: against a real sample-cnn on simcuda (fixed rate and a
// short trace, JSON format), against an in-process fake server that answers with a wrong
// digest (must be reported and fail the run), and its refusals (non-loopback targets, trace
// option errors).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "sample_process.h"

namespace sample_test {
namespace {

using nlohmann::json;

std::string Temp(const std::string& name) {
  return "/tmp/gshare-loadgen-e2e-" + std::to_string(getpid()) + "-" + name;
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str(), nullptr, false);
}

class LoadgenOnCnn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new SampleProcess;
    start_error_ = server_->Start(SAMPLE_CNN_BIN, {"--name", "cnn-a"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(start_error_, ""); }
  std::string Target(const std::string& name) const {
    return name + "=" + server_->base_url() + "/v2/models/cnn-a";
  }
  static SampleProcess* server_;
  static std::string start_error_;
};
SampleProcess* LoadgenOnCnn::server_ = nullptr;
std::string LoadgenOnCnn::start_error_;

TEST_F(LoadgenOnCnn, FixedRateRunChecksEveryAnswerAndWritesRunsJson) {
  const std::string out = Temp("fixed.json");
  const ProgramResult r = RunProgram(LOADGEN_BIN, {"--target", Target("cnn") + "@5000", "--rate", "20",
                                                   "--duration", "1.5", "--label", "fixed-test",
                                                   "--json", out, "--concurrency", "2"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("SLO %"), std::string::npos) << r.out;
  const json j = ReadJson(out);
  std::remove(out.c_str());
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["runs"].size(), 1u);
  const json& run = j["runs"][0];
  EXPECT_EQ(run["policy"], "fixed-test");
  EXPECT_EQ(run["requests"], 30);
  EXPECT_EQ(run["completed"], 30);
  EXPECT_EQ(run["errors"], 0);
  EXPECT_EQ(run["wrong_results"], 0);
  EXPECT_GT(run["p50_ms"].get<double>(), 0);
  EXPECT_GE(run["p99_ms"].get<double>(), run["p50_ms"].get<double>());
  EXPECT_TRUE(run.contains("gpu_seconds"));
  EXPECT_EQ(run["targets"][0]["name"], "cnn");
  EXPECT_EQ(run["targets"][0]["slo_ms"], 5000);
}

TEST_F(LoadgenOnCnn, ReplaysAShortCsvTraceMappedByName) {
  const std::string trace = Temp("trace.csv"), out = Temp("trace.json");
  std::ofstream(trace) << "timestamp_ms,function\n0,x\n100,y\n200,x\n300,y\n400,x\n";
  const ProgramResult r = RunProgram(
      LOADGEN_BIN, {"--target", Target("x"), "--target", Target("y"), "--format", "csv", "--trace",
                    trace, "--time-compression", "2", "--json", out, "--slo-ms", "5000"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const json j = ReadJson(out);
  std::remove(trace.c_str());
  std::remove(out.c_str());
  const json& run = j["runs"][0];
  EXPECT_EQ(run["requests"], 5);
  EXPECT_EQ(run["errors"], 0);
  EXPECT_EQ(run["targets"][0]["requests"], 3);  // x
  EXPECT_EQ(run["targets"][1]["requests"], 2);  // y
  EXPECT_NE(j["workload"].get<std::string>().find("by name"), std::string::npos) << j["workload"];
}

// An in-process server for model "fake" that is ready, claims `platform`, and answers
// inferences with `infer`. Serves on a free loopback port until destroyed.
class FakeServer {
 public:
  FakeServer(const std::string& platform, httplib::Server::Handler infer) {
    http_.Get("/v2/models/fake/ready", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{}", "application/json");
    });
    http_.Get("/v2/models/fake", [platform](const httplib::Request&, httplib::Response& res) {
      res.set_content(json{{"name", "fake"}, {"platform", platform}, {"parameters", {{"seed", 1}}}}.dump(),
                      "application/json");
    });
    http_.Post("/v2/models/fake/infer", std::move(infer));
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] {
      http_.listen_after_bind();
      listen_returned_.store(true);
    });
  }
  ~FakeServer() {
    // cpp-httplib 0.11's stop() does nothing before the accept loop has started.
    while (!http_.is_running() && !listen_returned_.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    http_.stop();
    thread_.join();
  }
  std::string target() const {
    return "f=http://127.0.0.1:" + std::to_string(port_) + "/v2/models/fake";
  }

 private:
  httplib::Server http_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
};

TEST(Loadgen, ReportsWrongAnswersAndFails) {
  const std::string out = Temp("wrong.json");
  ProgramResult r;
  {
    FakeServer fake("sample-cnn", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"outputs":[{"name":"digest","datatype":"BYTES","shape":[1],"data":["0000000000000000"]}]})",
                      "application/json");
    });
    r = RunProgram(LOADGEN_BIN, {"--target", fake.target(), "--rate", "50", "--duration", "0.2",
                                 "--json", out});
  }
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const json j = ReadJson(out);
  std::remove(out.c_str());
  EXPECT_EQ(j["runs"][0]["wrong_results"], 10);
  EXPECT_EQ(j["runs"][0]["errors_by_kind"]["wrong_digest"], 10);
  EXPECT_NE(r.err.find("does not match"), std::string::npos) << r.err;
}

TEST(Loadgen, AStalledServerCannotStretchTheRun) {
  const std::string out = Temp("slow.json");
  ProgramResult r;
  {
    FakeServer slow("sample-bert", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      res.status = 500;
    });
    r = RunProgram(LOADGEN_BIN, {"--target", slow.target(), "--rate", "50", "--duration", "1",
                                 "--max-seconds", "0.1", "--timeout-s", "0.3", "--concurrency", "1",
                                 "--json", out});
  }
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const json j = ReadJson(out);
  std::remove(out.c_str());
  const json& run = j["runs"][0];
  EXPECT_EQ(run["requests"], 6);  // arrivals at 0, 20, ..., 100 ms
  EXPECT_GE(run["errors_by_kind"]["transport"].get<int>(), 1);
  EXPECT_GE(run["errors_by_kind"]["skipped"].get<int>(), 1);
}

TEST(Loadgen, RefusesNonLoopbackTargets) {
  const ProgramResult r = RunProgram(LOADGEN_BIN, {"--target", "x=http://192.0.2.1:8000/v2/models/cnn"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("not a loopback address"), std::string::npos) << r.err;
}

TEST(Loadgen, TraceOptionErrorsAreClear) {
  const std::string t = "x=http://127.0.0.1:9/v2/models/cnn";
  ProgramResult r = RunProgram(LOADGEN_BIN, {"--target", t, "--trace", "/tmp/whatever.csv"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--trace needs --format"), std::string::npos) << r.err;
  r = RunProgram(LOADGEN_BIN, {"--target", t, "--format", "bogus"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
  r = RunProgram(LOADGEN_BIN, {"--target", t, "--format", "csv", "--trace", "/nonexistent/t.csv"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("/nonexistent/t.csv"), std::string::npos) << r.err;
  r = RunProgram(LOADGEN_BIN, {"--target", t, "--time-compression", "0"});
  EXPECT_EQ(r.status, 2);
  r = RunProgram(LOADGEN_BIN, {"--rate", "5"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no targets"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sample_test
