// gshare-trace end to end: the real gshare-arbiter (with its event ring in a file) manages one
// simulated 1 GiB GPU; two unmodified programs (tests/preload's preload_probe) run under
// LD_PRELOAD=libgshare.so with 768 MiB quotas, so each must be swapped out for the other to
// work. gshare-trace records the ring meanwhile (a separate process, reading the live ring);
// the trace must pass the trace-event format check, and its summary must show both functions
// with bursts and swaps. Also the command-line errors.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "swap_probe.h"
#include "gshare/trace/summary.h"
#include "gshare/trace/validate.h"
#include "test_util.h"

namespace gshare::trace {
namespace {

using arbiter::testing::ArbiterProcess;
using arbiter::testing::ExitCode;
using arbiter::testing::ReadFile;
using arbiter::testing::Spawn;
using arbiter::testing::TempDir;
using arbiter::testing::WaitFor;
using nlohmann::json;
using std::chrono::seconds;

// simcuda's environment for one test: its own device registry, removed when the test ends.
class Simcuda {
 public:
  explicit Simcuda(const std::string& tag) : registry_("/gshare-trace-" + tag + "-" + std::to_string(::getpid())) {}
  ~Simcuda() { ::shm_unlink(registry_.c_str()); }
  std::vector<std::string> env() const {
    return {std::string("LD_LIBRARY_PATH=") + SIMCUDA_DIR, "SIMCUDA_DEVICES=1x1GiB", "SIMCUDA_REGISTRY=" + registry_,
            std::string("SIMCUDA_KERNELS=") + SIMCUDA_KERNELS_LIB, "SIMCUDA_LINK_GBPS=0"};
  }

 private:
  std::string registry_;
};

json LoadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, false);
}

struct Tool {
  int code = -1;
  std::string out, err;
};

Tool RunTrace(const TempDir& dir, const std::vector<std::string>& args) {
  static int n = 0;
  const std::string base = dir / ("trace-tool" + std::to_string(n++));
  std::vector<std::string> argv = {TRACE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  Tool t;
  const pid_t pid = Spawn(argv, base + ".out", base + ".err");
  if (pid <= 0) return t;
  t.code = ExitCode(WaitFor(pid, seconds(60)));
  t.out = ReadFile(base + ".out");
  t.err = ReadFile(base + ".err");
  return t;
}

TEST(TraceEndToEnd, TwoPreloadedFunctionsRecordValidateAndSummarize) {
  TempDir dir;
  const Simcuda simcuda("e2e");
  ArbiterProcess arb{dir, {"--slice", "5ms"}};
  arb.env = simcuda.env();
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());

  // The recorder: from the start of the ring until SIGINT (the duration is a safety net).
  const std::string trace_path = dir / "trace.json";
  const pid_t recorder = Spawn({TRACE_BIN, "record", "--ring", arb.events(), "--from-start", "--duration", "240s",
                                "-o", trace_path},
                               dir / "record.out", dir / "record.err");
  ASSERT_GT(recorder, 0);

  const std::vector<std::string> names = {"alpha", "beta"};
  std::vector<std::unique_ptr<test::SwapProbe>> probes;
  for (size_t i = 0; i < names.size(); ++i) {
    std::map<std::string, std::string> env;
    for (const std::string& kv : simcuda.env()) env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    env["LD_PRELOAD"] = PRELOAD_LIB;
    env["GSHARE_ARBITER_SOCKET"] = arb.socket();
    env["GSHARE_VGPU_MEMORY"] = "768MiB";
    env["GSHARE_FUNCTION"] = names[i];
    env["GSHARE_SLO_MS"] = "50";
    env["GSHARE_LOG_FILE"] = dir / (names[i] + ".log");
    probes.push_back(std::make_unique<test::SwapProbe>(PROBE_BIN, static_cast<uint32_t>(11 + i), 6, 96, env));
    ASSERT_TRUE(probes.back()->ready())
        << probes.back()->ready_line() << ReadFile(dir / (names[i] + ".log"));
  }
  // Turns: whenever one works, the other (idle) must leave the GPU.
  for (int round = 0; round < 2; ++round) {
    for (auto& probe : probes) {
      const test::Verified v = probe->Verify();
      ASSERT_TRUE(v.answered) << ReadFile(arb.log());
      EXPECT_NE(v.line.find(" bad=0 "), std::string::npos) << v.line;
    }
  }
  for (auto& probe : probes) EXPECT_EQ(probe->Quit(), 0) << probe->process().err();

  // A dump of the live ring converts too.
  const Tool dump = RunTrace(dir, {"dump", "--ring", arb.events(), "-o", dir / "dump.json"});
  EXPECT_EQ(dump.code, 0) << dump.err;
  EXPECT_TRUE(ValidateTraceJson(LoadJson(dir / "dump.json")).ok());

  ASSERT_EQ(::kill(recorder, SIGINT), 0);
  EXPECT_EQ(ExitCode(WaitFor(recorder, seconds(60))), 0) << ReadFile(dir / "record.err");
  const json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());

  const json trace = LoadJson(trace_path);
  ASSERT_FALSE(trace.is_discarded()) << ReadFile(dir / "record.err");
  const Validation v = ValidateTraceJson(trace);
  ASSERT_TRUE(v.ok()) << v.errors.front();
  EXPECT_GT(v.phases.at("C"), 0u) << "memory counters";
  EXPECT_EQ(trace["otherData"]["lost_records"], 0);

  auto s = Summarize(trace);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->functions.size(), 2u) << FormatSummary(*s);
  uint64_t swap_in_bytes = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const FunctionSummary& f = s->functions[i];
    EXPECT_EQ(f.name, names[i]);
    EXPECT_EQ(f.clients.size(), 1u);
    EXPECT_EQ(f.slo_ms, 50u);
    EXPECT_GE(f.bursts, 1u) << FormatSummary(*s);
    EXPECT_GE(f.swap_ins + f.swap_outs, 1u) << FormatSummary(*s);
    EXPECT_GT(f.hold_us, 0) << FormatSummary(*s);
    swap_in_bytes += f.swap_in_bytes;
  }
  // The ring's swap counts agree with the arbiter's own.
  uint64_t ins = 0, outs = 0;
  for (const auto& f : s->functions) ins += f.swap_ins, outs += f.swap_outs;
  EXPECT_EQ(ins, summary["swap_ins"].get<uint64_t>()) << FormatSummary(*s);
  EXPECT_EQ(outs, summary["swap_outs"].get<uint64_t>()) << FormatSummary(*s);
  EXPECT_GE(swap_in_bytes, 96ull << 20) << "each program's 96 MiB block came back at least once\n"
                                        << FormatSummary(*s);

  // The command-line tool prints the same.
  const Tool text = RunTrace(dir, {"summary", trace_path});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("alpha"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("beta"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("SLO misses by cause"), std::string::npos) << text.out;
  const Tool valid = RunTrace(dir, {"validate", trace_path});
  EXPECT_EQ(valid.code, 0) << valid.out << valid.err;
  std::printf("%s", text.out.c_str());  // for the record (docs/tracing.md shows one)
}

TEST(TraceEndToEnd, ClearErrors) {
  TempDir dir;
  Tool t = RunTrace(dir, {"record", "--ring", dir / "missing", "--duration", "1s", "-o", dir / "t.json"});
  EXPECT_EQ(t.code, 1);
  EXPECT_NE(t.err.find("missing"), std::string::npos) << t.err;
  t = RunTrace(dir, {"record", "--ring", dir / "missing", "--duration", "soon"});
  EXPECT_EQ(t.code, 2);
  EXPECT_NE(t.err.find("--duration"), std::string::npos) << t.err;
  {
    std::ofstream(dir / "other.json") << R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0}]})";
  }
  t = RunTrace(dir, {"summary", dir / "other.json"});
  EXPECT_EQ(t.code, 1);
  EXPECT_NE(t.err.find("not a trace written by gshare-trace"), std::string::npos) << t.err;
  t = RunTrace(dir, {"validate", dir / "other.json"});
  EXPECT_EQ(t.code, 1);
  EXPECT_NE(t.err.find("missing dur"), std::string::npos) << t.err;
}

}  // namespace
}  // namespace gshare::trace
