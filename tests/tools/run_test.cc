// gshare-run: refuses bad values with messages naming the flag (exit status 2), execs the
// program with LD_PRELOAD and GSHARE_* set (its exit status is the program's), finds
// libgshare.so next to itself, and a real preloaded program on simcuda registers with a real
// gshare-arbiter under the name given.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <gtest/gtest.h>

#include "tools_fixture.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::seconds;

struct BadCase {
  std::vector<std::string> args;
  std::string message;
};

class RunBadValues : public ::testing::TestWithParam<BadCase> {};

TEST_P(RunBadValues, AreRefusedWithAClearMessage) {
  TempDir dir;
  std::vector<std::string> argv = {GSHARE_RUN_BIN, "--preload", PRELOAD_LIB};
  argv.insert(argv.end(), GetParam().args.begin(), GetParam().args.end());
  const ToolResult r = RunTool(dir, argv);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "the program must not run";
}

const std::vector<std::string> kTail = {"--", "/bin/echo", "ran"};
std::vector<std::string> With(std::vector<std::string> a, bool tail = true) {
  if (tail) a.insert(a.end(), kTail.begin(), kTail.end());
  return a;
}

INSTANTIATE_TEST_SUITE_P(
    Flags, RunBadValues,
    ::testing::Values(
        BadCase{With({"--memory", "1XB", "--slo", "50ms", "--name", "f"}), "--memory '1XB'"},
        BadCase{With({"--memory", "0", "--slo", "50ms", "--name", "f"}), "--memory '0'"},
        BadCase{With({"--memory", "100KiB", "--slo", "50ms", "--name", "f"}), "between 1MiB and 16TiB"},
        BadCase{With({"--memory", "1GiB", "--slo", "fast", "--name", "f"}), "--slo 'fast'"},
        BadCase{With({"--memory", "1GiB", "--slo", "500us", "--name", "f"}), "whole number of milliseconds"},
        BadCase{With({"--memory", "1GiB", "--slo", "2h", "--name", "f"}), "--slo '2h'"},
        BadCase{With({"--memory", "1GiB", "--slo", "50ms", "--name", "a b"}), "--name 'a b'"},
        BadCase{With({"--memory", "1GiB", "--slo", "50ms", "--name", std::string(200, 'x')}), "1 to 127"},
        BadCase{With({"--memory", "1GiB", "--slo", "50ms", "--name", "f", "--log-level", "loud"}), "--log-level 'loud'"},
        BadCase{With({"--memory", "1GiB", "--slo", "50ms", "--name", "f", "--fail", "maybe"}), "--fail 'maybe'"},
        BadCase{With({"--memory", "1GiB", "--slo", "50ms", "--name", "f", "--idle-release", "0us"}), "--idle-release"},
        BadCase{With({"--slo", "50ms", "--name", "f"}), "--memory is required"},
        BadCase{With({"--memory", "1GiB", "--slo", "50ms", "--name", "f"}, false), "missing '-- PROGRAM"}),
    [](const ::testing::TestParamInfo<BadCase>& param) { return "Case" + std::to_string(param.index); });

TEST(Run, ExecsTheProgramWithTheShimEnvironment) {
  TempDir dir;
  const std::string other = "/lib/x86_64-linux-gnu/libm.so.6";
  struct stat st{};
  const bool have_other = ::stat(other.c_str(), &st) == 0;
  std::vector<std::string> env;
  if (have_other) env.push_back("LD_PRELOAD=" + other);
  const ToolResult r = RunTool(dir,
                               {GSHARE_RUN_BIN, "--memory", "1GiB", "--slo", "50ms", "--name",
                                "resnet", "--arbiter", "/run/x/a.sock", "--idle-release", "500us",
                                "--fail", "closed", "--preload", PRELOAD_LIB, "--", PRINT_ENV_BIN},
                               env);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string expect_preload =
      "LD_PRELOAD=" + (have_other ? other + ":" : std::string()) + PRELOAD_LIB + "\n";
  EXPECT_NE(r.out.find(expect_preload), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GSHARE_VGPU_MEMORY=1024MiB\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GSHARE_SLO_MS=50\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GSHARE_FUNCTION=resnet\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GSHARE_ARBITER_SOCKET=/run/x/a.sock\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GSHARE_IDLE_RELEASE_US=500\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GSHARE_ARBITER_FAIL=closed\n"), std::string::npos) << r.out;
}

TEST(Run, FindsLibgshareNextToItselfAndDefaultsTheSocket) {
  TempDir dir;
  const ToolResult r = RunTool(dir, {GSHARE_RUN_BIN, "--memory", "512MiB", "--slo", "1s", "--name",
                                     "f", "--", PRINT_ENV_BIN},
                               {"LD_PRELOAD="});
  ASSERT_EQ(r.code, 0) << r.err;
  char resolved[PATH_MAX];
  ASSERT_NE(::realpath(PRELOAD_LIB, resolved), nullptr);
  EXPECT_NE(r.out.find(std::string("LD_PRELOAD=") + resolved + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GSHARE_SLO_MS=1000\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GSHARE_ARBITER_SOCKET=/run/gshare/arbiter.sock\n"), std::string::npos) << r.out;
  const ToolResult alone = RunTool(dir, {GSHARE_RUN_BIN, "--memory", "512MiB", "--slo", "1s",
                                         "--name", "f", "--arbiter", "none", "--", PRINT_ENV_BIN});
  EXPECT_EQ(alone.out.find("GSHARE_ARBITER_SOCKET="), std::string::npos) << alone.out;
}

TEST(Run, ExitStatusIsTheProgramsOwn) {
  TempDir dir;
  const std::vector<std::string> head = {GSHARE_RUN_BIN, "--memory", "64MiB", "--slo", "10ms",
                                         "--name", "x", "--preload", PRELOAD_LIB, "--"};
  auto run = [&](std::vector<std::string> tail) {
    std::vector<std::string> argv = head;
    argv.insert(argv.end(), tail.begin(), tail.end());
    return RunTool(dir, argv);
  };
  EXPECT_EQ(run({"/bin/sh", "-c", "exit 7"}).code, 7);
  EXPECT_EQ(run({"/bin/true"}).code, 0);
  const ToolResult missing = run({"/nonexistent/server"});
  EXPECT_EQ(missing.code, 127);
  EXPECT_NE(missing.err.find("cannot execute '/nonexistent/server'"), std::string::npos) << missing.err;
  // exec, not fork: the program has gshare-run's pid (sh prints its own).
  const ToolResult same = run({"/bin/sh", "-c", "echo $$ $PPID"});
  EXPECT_EQ(same.code, 0);
  EXPECT_FALSE(same.out.empty());
}

#ifdef PROBE_BIN
// An unmodified driver-API program on simcuda, started by gshare-run, registers with a real
// gshare-arbiter under its name and runs correctly; gshare-ctl sees it while it runs.
TEST_F(ToolsTest, RunStartsARealPreloadedProgramUnderTheArbiter) {
  const std::string registry = "/gshare-tools-run-" + std::to_string(::getpid());
  const std::vector<std::string> simcuda = {
      std::string("LD_LIBRARY_PATH=") + SIMCUDA_DIR, "SIMCUDA_DEVICES=1x1GiB",
      "SIMCUDA_REGISTRY=" + registry, std::string("SIMCUDA_KERNELS=") + SIMCUDA_KERNELS_LIB,
      "SIMCUDA_LINK_GBPS=0"};
  arb = std::make_unique<ArbiterProcess>(dir, std::vector<std::string>{"--slice", "5ms"});
  arb->env = simcuda;
  ASSERT_TRUE(arb->Start()) << ReadFile(arb->log());
  std::vector<std::string> env = simcuda;
  env.push_back("GSHARE_LOG_FILE=" + (dir / "probe.log"));
  const pid_t pid = Spawn({GSHARE_RUN_BIN, "--memory", "256MiB", "--slo", "40ms", "--name",
                           "probe-fn", "--arbiter", arb->socket(), "--log-level", "info", "--",
                           PROBE_BIN, "stress", "2", "200"},
                          dir / "probe.out", dir / "probe.err", env);
  ASSERT_GT(pid, 0);
  // While it runs, gshare-ctl lists it with gshare-run's pid (exec, not fork).
  const bool seen = WaitForClients([&](const nlohmann::json& l) {
    return l.size() == 1 && l[0]["function"] == "probe-fn" && l[0]["pid"] == pid &&
           l[0]["slo_ms"] == 40 && l[0]["quota_bytes"] == (256ull << 20);
  }, seconds(60));
  const int code = ExitCode(WaitFor(pid, seconds(120)));
  ::shm_unlink(registry.c_str());
  EXPECT_TRUE(seen) << ReadFile(arb->log());
  EXPECT_EQ(code, 0) << ReadFile(dir / "probe.out") << ReadFile(dir / "probe.err")
                     << ReadFile(dir / "probe.log");
  EXPECT_NE(ReadFile(dir / "probe.out").find("errors=0"), std::string::npos);
  EXPECT_NE(ReadFile(dir / "probe.log").find("registered with the arbiter"), std::string::npos)
      << ReadFile(dir / "probe.log");
  const nlohmann::json summary = arb->Stop();
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["registrations"], 1);
  EXPECT_GT(summary["grants"].get<int>(), 0);
}
#endif

}  // namespace
}  // namespace gshare::arbiter::testing
