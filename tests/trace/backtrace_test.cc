// GSHARE_BACKTRACE: an unmodified program (backtrace_probe) under LD_PRELOAD=libgshare.so on
// simcuda makes failing calls (a hand-written hook: cuMemAlloc_v2 beyond the quota; a generated
// forwarder: cuLaunchKernel of a null kernel). With GSHARE_BACKTRACE=1 the shim's log holds a
// backtrace naming the program's own functions; without it, or without a log file, none is
// written anywhere; repeated errors are rate-limited and the suppressed ones counted.
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include <cuda.h>
#include <gtest/gtest.h>

#include "child_process.h"
#include "test_util.h"

namespace gshare::trace {
namespace {

using arbiter::testing::ReadFile;
using arbiter::testing::TempDir;

struct ProbeRun {
  std::map<std::string, std::string> out;
  std::string err;
  std::string log;
};

ProbeRun RunProbe(const TempDir& dir, const std::string& tag, bool backtrace, bool log_file, int repeat = 1) {
  const std::string registry = "/gshare-backtrace-" + tag + "-" + std::to_string(::getpid());
  std::map<std::string, std::string> env = {
      {"LD_LIBRARY_PATH", SIMCUDA_DIR},   {"SIMCUDA_DEVICES", "1x1GiB"},
      {"SIMCUDA_REGISTRY", registry},     {"SIMCUDA_KERNELS", SIMCUDA_KERNELS_LIB},
      {"LD_PRELOAD", PRELOAD_LIB},        {"GSHARE_VGPU_MEMORY", "256MiB"},
      {"GSHARE_ARBITER_SOCKET", ""},      {"GSHARE_BACKTRACE", backtrace ? "1" : ""},
      {"GSHARE_LOG_LEVEL", log_file ? "" : "info"},
      {"GSHARE_LOG_FILE", log_file ? dir / (tag + ".log") : ""}};
  ProbeRun r;
  r.out = test::RunKeyValues({BACKTRACE_PROBE_BIN, std::to_string(repeat)}, env, &r.err);
  if (log_file) r.log = ReadFile(dir / (tag + ".log"));
  ::shm_unlink(registry.c_str());
  return r;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ShimBacktrace, NamesTheApplicationsFunctionInTheLog) {
  TempDir dir;
  const ProbeRun r = RunProbe(dir, "on", true, true);
  ASSERT_EQ(r.out.at("exit"), "0") << r.err << r.log;
  EXPECT_EQ(r.out.at("alloc"), std::to_string(CUDA_ERROR_OUT_OF_MEMORY));
  EXPECT_NE(r.out.at("launch"), "0");
  EXPECT_NE(r.log.find("cuMemAlloc_v2 returned CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("ApplicationAllocatesTooMuch"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("cuLaunchKernel returned"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("ApplicationLaunchesANullKernel"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("main+"), std::string::npos) << r.log;
  EXPECT_EQ(r.err.find("backtrace"), std::string::npos) << "never on the application's stderr: " << r.err;
}

TEST(ShimBacktrace, NoneWithoutTheVariable) {
  TempDir dir;
  const ProbeRun r = RunProbe(dir, "off", false, true);
  ASSERT_EQ(r.out.at("exit"), "0") << r.err << r.log;
  EXPECT_EQ(r.out.at("alloc"), std::to_string(CUDA_ERROR_OUT_OF_MEMORY));
  EXPECT_NE(r.log.find("libgshare loaded"), std::string::npos) << "the log works: " << r.log;
  EXPECT_EQ(r.log.find("backtrace"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("ApplicationAllocatesTooMuch"), std::string::npos) << r.log;
}

TEST(ShimBacktrace, NeverOnStderrWithoutALogFile) {
  TempDir dir;
  const ProbeRun r = RunProbe(dir, "stderr", true, false);
  ASSERT_EQ(r.out.at("exit"), "0") << r.err;
  EXPECT_EQ(r.err.find("backtrace"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ApplicationAllocatesTooMuch"), std::string::npos) << r.err;
}

TEST(ShimBacktrace, RepeatedErrorsAreRateLimitedAndCounted) {
  TempDir dir;
  const ProbeRun r = RunProbe(dir, "many", true, true, 60);
  ASSERT_EQ(r.out.at("exit"), "0") << r.err << r.log;
  const size_t traces = Count(r.log, "; backtrace");
  EXPECT_GE(traces, 2u) << r.log;
  EXPECT_LT(traces, 60u) << r.log;
  EXPECT_NE(r.log.find("earlier errors not shown: rate limit"), std::string::npos) << r.log;
}

}  // namespace
}  // namespace gshare::trace
