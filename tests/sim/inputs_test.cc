// gshare-sim's workload inputs: csv traces with execution times, SLOs from the functions' own
// p90, busy functions split into instances, errors passed through with the line number.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gshare/sim/inputs.h"

namespace gshare::sim {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              ("gshare-sim-inputs-" + std::to_string(getpid()) + "-" + std::to_string(counter_++) + ".csv")) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(Inputs, CsvWithExecutionTimesAndSloFromTheFunctionsP90) {
  std::string text = "timestamp_ms,function,exec_ms\n";
  for (int i = 0; i < 20; ++i) text += std::to_string(i * 1000) + ",a," + std::to_string(i + 1) + "\n";
  text += "5,b,2\n";
  TempFile file(text);
  InputOptions o;
  o.trace = file.path();
  o.format = "csv";
  o.slo_factor = 2;
  o.slo_floor_ms = 10;
  const Result<Inputs> in = LoadInputs(o);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->workload.functions.size(), 2u);
  ASSERT_EQ(in->workload.requests.size(), 21u);
  EXPECT_EQ(in->workload.requests[0].exec, 1000);
  // a: p90 of 1..20 ms is 19 ms -> SLO 38 ms; b: too few requests: catalog p90, 10 ms floor.
  EXPECT_EQ(in->workload.functions[0].slo, 38'000);
  EXPECT_GE(in->workload.functions[1].slo, 10'000);
}

TEST(Inputs, SplitsABusyFunctionIntoInstances) {
  std::string text = "timestamp_ms,function,exec_ms\n";
  for (int i = 0; i < 100; ++i) text += std::to_string(i * 10) + ",hot,8\n";  // 80% busy
  TempFile file(text);
  InputOptions o;
  o.trace = file.path();
  o.format = "csv";
  o.max_instance_load = 0.5;
  const Result<Inputs> in = LoadInputs(o);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->workload.functions.size(), 2u);
  EXPECT_EQ(in->workload.requests[0].function, 0u);
  EXPECT_EQ(in->workload.requests[1].function, 1u);
  EXPECT_EQ(in->workload.requests[2].function, 0u);
}

TEST(Inputs, IdleFirstRoutingPrefersTheFirstIdleInstance) {
  // 80% busy (two instances): each 8 ms request ends before the next arrives 10 ms later, so
  // idle-first sends every one to instance 0, where round-robin alternates.
  std::string text = "timestamp_ms,function,exec_ms\n";
  for (int i = 0; i < 100; ++i) text += std::to_string(i * 10) + ",hot,8\n";
  text += "995,hot,8\n";  // arrives while instance 0 is busy: goes to instance 1
  TempFile file(text);
  InputOptions o;
  o.trace = file.path();
  o.format = "csv";
  o.routing = "idle-first";
  const Result<Inputs> in = LoadInputs(o);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->workload.functions.size(), 2u);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(in->workload.requests[i].function, 0u) << i;
  EXPECT_EQ(in->workload.requests[100].function, 1u);
  o.routing = "random";
  EXPECT_NE(LoadInputs(o).status().message().find("routing"), std::string::npos);
}

// warm-first keeps round-robin's assignment (the simulator re-routes at arrival) and names
// each instance's function: the group is the function's first instance.
TEST(Inputs, InstancesOfAFunctionShareAGroup) {
  std::string text = "timestamp_ms,function,exec_ms\n";
  for (int i = 0; i < 100; ++i) text += std::to_string(i * 10) + ",hot,8\n";
  text += "5,cold,1\n";
  TempFile file(text);
  InputOptions o;
  o.trace = file.path();
  o.format = "csv";
  o.routing = "warm-first";
  const Result<Inputs> in = LoadInputs(o);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->workload.functions.size(), 3u);
  ASSERT_EQ(in->workload.group.size(), 3u);
  const FunctionId hot = in->workload.requests[0].function;
  EXPECT_EQ(in->workload.group[hot], hot);
  EXPECT_EQ(in->workload.group[hot + 1], hot);
  EXPECT_EQ(in->workload.requests[2].function, hot + 1);  // round-robin as named
}

TEST(Inputs, ReportsParseErrorsWithTheLine) {
  TempFile file("timestamp_ms,function\n1,a\nx,b\n");
  InputOptions o;
  o.trace = file.path();
  o.format = "csv";
  const Result<Inputs> in = LoadInputs(o);
  EXPECT_NE(in.status().message().find(":3:"), std::string::npos) << in.status().message();
}

TEST(Inputs, ShippedAzureLlmTraceLoads) {
  InputOptions o;
  o.format = "azure-llm";
  o.functions = 20;
  o.max_requests = 2000;
  const Result<Inputs> in = LoadInputs(o);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->workload.requests.size(), 2000u);
  EXPECT_GE(in->workload.functions.size(), 20u);
}

TEST(Inputs, SyntheticIsSeeded) {
  InputOptions o;
  o.synthetic = true;
  o.functions = 30;
  o.duration_s = 600;
  const Result<Inputs> a = LoadInputs(o), b = LoadInputs(o);
  o.seed = 2;
  const Result<Inputs> c = LoadInputs(o);
  ASSERT_EQ(a->workload.requests.size(), b->workload.requests.size());
  for (size_t i = 0; i < a->workload.requests.size(); ++i) {
    EXPECT_EQ(a->workload.requests[i].arrival, b->workload.requests[i].arrival);
    EXPECT_EQ(a->workload.requests[i].exec, b->workload.requests[i].exec);
  }
  EXPECT_NE(a->workload.requests.size(), c->workload.requests.size());
}

TEST(Inputs, UnknownFormatIsAnError) {
  InputOptions o;
  o.format = "parquet";
  o.trace = "/nonexistent";
  EXPECT_FALSE(LoadInputs(o).ok());
}

}  // namespace
}  // namespace gshare::sim

namespace gshare::sim {
namespace {

// --models-by-name: "cnn-3" runs the catalog's "cnn", "bert" runs "bert"; a function without a
// model of its name is an error that names it.
TEST(Inputs, ModelsByName) {
  TempFile catalog(
      "context = \"0B\"\n"
      "[[model]]\nname = \"cnn\"\nweights = \"96MiB\"\nexec = \"1ms\"\n"
      "[[model]]\nname = \"bert\"\nweights = \"320MiB\"\nexec = \"1ms\"\n");
  TempFile trace("timestamp_ms,function,exec_ms\n0,cnn-3,5\n1,bert,5\n2,cnn-12,5\n");
  InputOptions o;
  o.trace = trace.path();
  o.format = "csv";
  o.catalog = catalog.path();
  o.models_by_name = true;
  o.max_instance_load = 1e9;  // one instance each
  Result<Inputs> in = LoadInputs(o);
  ASSERT_EQ(in.status().message(), "");
  ASSERT_EQ(in->workload.functions.size(), 3u);
  EXPECT_EQ(in->workload.functions[0].model, "cnn");
  EXPECT_EQ(in->workload.functions[1].model, "bert");
  EXPECT_EQ(in->workload.functions[2].model, "cnn");
  EXPECT_EQ(in->workload.functions[1].weights_bytes, 320u << 20);
  TempFile unknown("timestamp_ms,function,exec_ms\n0,llm-0,5\n");
  o.trace = unknown.path();
  in = LoadInputs(o);
  EXPECT_NE(in.status().message().find("'llm-0'"), std::string::npos) << in.status().message();
}

}  // namespace
}  // namespace gshare::sim
