// gshare-ctl against a real gshare-arbiter with fake functions speaking the real protocol:
// status and clients (human and --json), evict, drain/undrain, set-slo, errors, access control
// by uid (a child that drops to uid 65534), and a stopped arbiter.
#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "tools_fixture.h"

namespace gshare::arbiter::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// A function that keeps asking for short bursts for a long time (killed at the end).
std::vector<std::string> Busy(int quota_mib, int slo_ms) {
  return {"--quota-mib", std::to_string(quota_mib), "--slo-ms", std::to_string(slo_ms),
          "--requests", "100000", "--work-us", "1000", "--gap-us", "10000"};
}

json ClientNamed(const json& clients, const std::string& name) {
  for (const json& c : clients)
    if (c.value("function", "") == name) return c;
  return nullptr;
}

TEST_F(ToolsTest, StatusAndClientsShowGpusAndFunctions) {
  StartArbiter();
  FakeFunction a(dir, arb->socket(), "resnet", Busy(256, 50));
  FakeFunction b(dir, arb->socket(), "bert", Busy(512, 80));
  ASSERT_TRUE(WaitForClients([](const json& l) {
    return l.size() == 2 && l[0].value("bursts", 0) > 0 && l[1].value("bursts", 0) > 0;
  })) << ReadFile(arb->log());

  const json status = CtlJson({"status"});
  ASSERT_TRUE(status.is_object()) << Ctl({"--json", "status"}).err;
  EXPECT_EQ(status["ok"], true);
  EXPECT_EQ(status["clients"], 2);
  ASSERT_EQ(status["gpus"].size(), 1u);
  const json& g = status["gpus"][0];
  EXPECT_EQ(g["gpu"], 0);
  EXPECT_EQ(g["total_bytes"].get<uint64_t>(), 1ull << 30);
  EXPECT_EQ(g["usable_bytes"].get<uint64_t>(), 1ull << 30);
  EXPECT_EQ(g["reserved_bytes"].get<uint64_t>(), 768ull << 20);  // both fit: both resident
  EXPECT_EQ(g["resident_bytes"].get<uint64_t>(), 768ull << 20);
  EXPECT_GT(g["busy"].get<double>(), 0.0);
  EXPECT_FALSE(g["utilisation"].empty());

  const json clients = CtlJson({"clients"});
  ASSERT_TRUE(clients.is_object());
  const json r = ClientNamed(clients["clients"], "resnet");
  ASSERT_TRUE(r.is_object()) << clients.dump();
  EXPECT_EQ(r["pid"], a.pid());
  EXPECT_EQ(r["uid"], ::getuid());
  EXPECT_EQ(r["quota_bytes"].get<uint64_t>(), 256ull << 20);
  EXPECT_EQ(r["slo_ms"], 50);
  EXPECT_EQ(r["gpu"], 0);
  EXPECT_EQ(r["state"], "resident");
  EXPECT_TRUE(r["phase"] == "resident" || r["phase"] == "holding") << r.dump();
  EXPECT_GT(r["bursts"].get<int>(), 0);
  EXPECT_EQ(r["bursts"].get<uint64_t>(), r["slo_met"].get<uint64_t>() + r["slo_missed"].get<uint64_t>());
  EXPECT_EQ(ClientNamed(clients["clients"], "bert")["pid"], b.pid());

  // The instances view (for platforms' routers): both functions have one warm instance each
  // (both fit: both resident), and the table says so.
  const json instances = CtlJson({"instances"});
  ASSERT_TRUE(instances.is_object()) << Ctl({"--json", "instances"}).err;
  ASSERT_EQ(instances["functions"].size(), 2u) << instances.dump();
  for (const json& f : instances["functions"]) {
    EXPECT_EQ(f["total"], 1) << f.dump();
    EXPECT_EQ(f["warm"], 1) << f.dump();
    ASSERT_EQ(f["instances"].size(), 1u);
    EXPECT_EQ(f["instances"][0]["warm"], true);
    EXPECT_EQ(f["instances"][0]["pid"], f["function"] == "resnet" ? a.pid() : b.pid());
  }
  const ToolResult instance_table = Ctl({"instances"});
  EXPECT_EQ(instance_table.code, 0) << instance_table.err;
  EXPECT_NE(instance_table.out.find("FUNCTION  WARM"), std::string::npos) << instance_table.out;
  EXPECT_NE(instance_table.out.find("resnet"), std::string::npos) << instance_table.out;

  const ToolResult human = Ctl({"status"});
  EXPECT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find("GPU  MEMORY  USABLE  RESERVED"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("768 MiB"), std::string::npos) << human.out;
  const ToolResult table = Ctl({"clients"});
  EXPECT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("resnet"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(std::to_string(b.pid())), std::string::npos) << table.out;
}

TEST_F(ToolsTest, EvictSwapsAClientOutAndItsDataSurvives) {
  StartArbiter();
  FakeFunction f(dir, arb->socket(), "victim",
                 {"--quota-mib", "128", "--slo-ms", "100", "--requests", "60", "--work-us", "500",
                  "--gap-us", "20000"});
  ASSERT_TRUE(WaitForClients([](const json& l) { return l.size() == 1 && l[0]["bursts"] > 0; }));
  const json reply = CtlJson({"evict", "victim"});
  ASSERT_TRUE(reply.is_object());
  EXPECT_EQ(reply["ok"], true) << reply.dump();
  // The swap-out is acknowledged by the client (counted by the arbiter).
  EXPECT_TRUE(WaitForClients([](const json& l) { return l.size() == 1 && l[0]["swaps_out"] > 0; }))
      << ReadFile(arb->log());
  EXPECT_EQ(f.Wait(), 0) << f.output();  // every request ran on intact data
  const json summary = arb->Stop();
  ASSERT_TRUE(summary.is_object());
  EXPECT_GE(summary["swap_outs"].get<int>(), 1);
  EXPECT_GE(summary["swap_ins"].get<int>(), 1);
}

TEST_F(ToolsTest, DrainMovesEveryoneOffUntilUndrain) {
  StartArbiter();
  FakeFunction a(dir, arb->socket(), "a",
                 {"--quota-mib", "256", "--requests", "40", "--work-us", "1000", "--gap-us", "5000"});
  FakeFunction b(dir, arb->socket(), "b",
                 {"--quota-mib", "256", "--requests", "40", "--work-us", "1000", "--gap-us", "5000"});
  ASSERT_TRUE(WaitForClients([](const json& l) { return l.size() == 2; }));
  const ToolResult drained = Ctl({"drain", "0"});
  EXPECT_EQ(drained.code, 0) << drained.err;
  EXPECT_NE(drained.out.find("GPU 0 drained"), std::string::npos) << drained.out;
  // Everyone ends up swapped out, nobody holds the GPU, nothing stays reserved.
  EXPECT_TRUE(WaitForClients([](const json& l) {
    for (const json& c : l)
      if (c["state"] != "swapped" || c["holding"] == true) return false;
    return l.size() == 2;
  })) << ReadFile(arb->log());
  const json status = CtlJson({"status"});
  EXPECT_EQ(status["gpus"][0]["drained"], true);
  EXPECT_EQ(status["gpus"][0]["reserved_bytes"], 0);
  EXPECT_TRUE(status["gpus"][0]["holder"].is_null());
  // While drained, nothing becomes resident again.
  const json later = CtlJson({"clients"});
  for (const json& c : later["clients"]) {
    EXPECT_EQ(c["state"], "swapped") << later.dump();
    EXPECT_EQ(c["phase"], "out") << later.dump();  // docs/arbiter.md's state diagram
  }

  const ToolResult undrained = Ctl({"undrain", "0"});
  EXPECT_EQ(undrained.code, 0) << undrained.err;
  EXPECT_EQ(a.Wait(), 0) << a.output() << ReadFile(arb->log());
  EXPECT_EQ(b.Wait(), 0) << b.output();
  EXPECT_EQ(CtlJson({"status"})["gpus"][0]["drained"], false);
}

TEST_F(ToolsTest, SetSloReachesThePolicyWhenTheClientIsIdle) {
  StartArbiter();
  FakeFunction f(dir, arb->socket(), "slo", Busy(64, 40));
  ASSERT_TRUE(WaitForClients([](const json& l) { return l.size() == 1; }));
  const json reply = CtlJson({"set-slo", "slo", "77"});
  ASSERT_TRUE(reply.is_object());
  EXPECT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(reply["old_slo_ms"], 40);
  EXPECT_TRUE(WaitForClients([](const json& l) { return l.size() == 1 && l[0]["slo_ms"] == 77; }))
      << ReadFile(arb->log());
  EXPECT_NE(ReadFile(arb->log()).find("SLO now 77 ms"), std::string::npos);
  // It keeps being served under the new SLO.
  const uint64_t before = CtlJson({"clients"})["clients"][0]["bursts"].get<uint64_t>();
  EXPECT_TRUE(WaitForClients([&](const json& l) { return l[0]["bursts"].get<uint64_t>() > before + 3; }));
}

TEST_F(ToolsTest, ErrorsAreClearAndExitCodesDistinct) {
  StartArbiter();
  ToolResult r = Ctl({"evict", "nobody"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("evict: no client \"nobody\""), std::string::npos) << r.err;
  r = Ctl({"drain", "5"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("GPU 5 is not managed"), std::string::npos) << r.err;
  r = Ctl({"--json", "undrain", "7"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(nlohmann::json::parse(r.out, nullptr, false)["ok"], false) << r.out;
  // Bad usage: exit status 2, before talking to anyone.
  EXPECT_EQ(Ctl({"drain"}).code, 2);
  EXPECT_EQ(Ctl({"set-slo", "1", "0"}).code, 2);
  EXPECT_EQ(Ctl({"frobnicate"}).code, 2);
  EXPECT_EQ(Ctl({}).code, 2);
}

TEST_F(ToolsTest, StoppedArbiterIsReportedAsNotRunning) {
  // Never started: no socket file.
  ToolResult r = Ctl({"status"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("gshare-arbiter is not running at " + control()), std::string::npos) << r.err;
  // Killed: a stale socket file nobody listens on.
  StartArbiter();
  EXPECT_EQ(Ctl({"status"}).code, 0);
  arb->Kill();
  r = Ctl({"--json", "clients"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("is not running"), std::string::npos) << r.err;
}

// Runs gshare-ctl as uid/gid 65534 (the tests run as root): fork, drop privileges, exec.
ToolResult CtlAsNobody(const TempDir& dir, const std::string& control, std::vector<std::string> args) {
  static int n = 0;
  const std::string out = dir / ("nobody" + std::to_string(n) + ".out");
  const std::string err = dir / ("nobody" + std::to_string(n++) + ".err");
  // The build tree may sit where uid 65534 cannot reach it (a CI clone under a 0700 mktemp
  // directory): run a copy from the test's own directory (gshare-ctl links only system libraries).
  const std::string bin = dir / "gshare-ctl";
  std::error_code ec;
  std::filesystem::copy_file(GSHARE_CTL_BIN, bin,
                             std::filesystem::copy_options::overwrite_existing, ec);
  std::filesystem::permissions(bin, std::filesystem::perms(0755), ec);
  args.insert(args.begin(), {bin, "--socket", control});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(120);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(121);
    ::execv(argv[0], argv.data());
    ::_exit(122);
  }
  ToolResult r;
  r.code = ExitCode(WaitFor(pid, std::chrono::seconds(60)));
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

TEST_F(ToolsTest, UnauthorisedUidIsRefused) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to drop to uid 65534";
  StartArbiter();
  const ToolResult r = CtlAsNobody(dir, control(), {"status"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("uid 65534 is not authorised"), std::string::npos) << r.err;
  const ToolResult d = CtlAsNobody(dir, control(), {"drain", "0"});
  EXPECT_EQ(d.code, 1);
  EXPECT_EQ(CtlJson({"status"})["gpus"][0]["drained"], false);
}

TEST_F(ToolsTest, ReadOnlyUidMayReadButNotChange) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to drop to uid 65534";
  StartArbiter({"--control-read-uids", "65534"});
  const ToolResult s = CtlAsNobody(dir, control(), {"--json", "status"});
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(nlohmann::json::parse(s.out, nullptr, false)["ok"], true) << s.out;
  const ToolResult d = CtlAsNobody(dir, control(), {"drain", "0"});
  EXPECT_EQ(d.code, 1);
  EXPECT_NE(d.err.find("may only read"), std::string::npos) << d.err;
  EXPECT_EQ(CtlJson({"status"})["gpus"][0]["drained"], false);
}

TEST_F(ToolsTest, AdminGroupMayChange) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to drop to uid 65534";
  StartArbiter({"--control-admin-gids", "65534"});
  const ToolResult d = CtlAsNobody(dir, control(), {"drain", "0"});
  EXPECT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(CtlJson({"status"})["gpus"][0]["drained"], true);
}

}  // namespace
}  // namespace gshare::arbiter::testing

namespace gshare::arbiter::testing {
namespace {

// With two GPUs, a drained GPU takes no new registrations: they go to the other one.
TEST_F(ToolsTest, DrainedGpuTakesNoNewRegistrations) {
  StartArbiter({"--gpu-count", "2"});
  ASSERT_EQ(Ctl({"drain", "0"}).code, 0);
  FakeFunction f(dir, arb->socket(), "late", {"--quota-mib", "64", "--requests", "100000",
                                              "--work-us", "500", "--gap-us", "20000"});
  ASSERT_TRUE(WaitForClients([](const nlohmann::json& l) { return l.size() == 1; }));
  const nlohmann::json c = CtlJson({"clients"})["clients"][0];
  EXPECT_EQ(c["gpu"], 1) << c.dump();
  const nlohmann::json s = CtlJson({"status"});
  EXPECT_EQ(s["gpus"][0]["reserved_bytes"], 0) << s.dump();
  EXPECT_EQ(s["gpus"][0]["drained"], true);
  EXPECT_EQ(s["gpus"][1]["drained"], false);
}

}  // namespace
}  // namespace gshare::arbiter::testing
