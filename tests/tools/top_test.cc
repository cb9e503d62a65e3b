// gshare-top in snapshot mode against a real gshare-arbiter with fake functions, and in a
// stopped-arbiter situation.
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "tools_fixture.h"

namespace gshare::arbiter::testing {
namespace {

using nlohmann::json;

TEST_F(ToolsTest, TopSnapshotShowsHolderTenantsMemoryAndFunctions) {
  StartArbiter();
  FakeFunction a(dir, arb->socket(), "resnet",
                 {"--quota-mib", "512", "--slo-ms", "1", "--requests", "100000", "--work-us",
                  "2000", "--gap-us", "3000"});
  FakeFunction b(dir, arb->socket(), "bert",
                 {"--quota-mib", "768", "--slo-ms", "1", "--requests", "100000", "--work-us",
                  "2000", "--gap-us", "3000"});
  // Both have been served and (1 ms SLOs on a shared GPU) some request missed its SLO.
  ASSERT_TRUE(WaitForClients([](const json& l) {
    if (l.size() != 2) return false;
    for (const json& c : l)
      if (c["bursts"] == 0) return false;
    return l[0]["slo_missed"] > 0 || l[1]["slo_missed"] > 0;
  })) << ReadFile(arb->log());
  const ToolResult r = RunTool(dir, {GSHARE_TOP_BIN, "--snapshot", "--socket", control()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string& s = r.out;
  EXPECT_NE(s.find("gshare-top  policy aggressive"), std::string::npos) << s;
  EXPECT_NE(s.find("GPU 0  ["), std::string::npos) << s;
  EXPECT_NE(s.find("% busy"), std::string::npos) << s;
  EXPECT_NE(s.find("memory: resident"), std::string::npos) << s;
  EXPECT_NE(s.find("tenants:"), std::string::npos) << s;
  EXPECT_NE(s.find("resnet (#"), std::string::npos) << s;  // a tenant with its share
  EXPECT_NE(s.find("FUNCTIONS"), std::string::npos) << s;
  EXPECT_NE(s.find("bert"), std::string::npos) << s;
  EXPECT_NE(s.find("RECENT SLO MISSES"), std::string::npos) << s;
  EXPECT_EQ(s.find("RECENT SLO MISSES\nnone"), std::string::npos) << s;
  EXPECT_EQ(s.find("\x1b["), std::string::npos) << "no escape codes in a snapshot to a file";
  // 512 + 768 MiB do not fit 1 GiB: one is swapped out.
  EXPECT_NE(s.find("swapped"), std::string::npos) << s;
}

TEST_F(ToolsTest, TopSnapshotOfAStoppedArbiterFails) {
  const ToolResult r = RunTool(dir, {GSHARE_TOP_BIN, "--snapshot", "--socket", control()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("is not running"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gshare::arbiter::testing

namespace gshare::arbiter::testing {
namespace {

// Runs `tmux -L <server> args...` and returns its stdout.
std::string Tmux(const TempDir& dir, const std::string& server, std::vector<std::string> args) {
  args.insert(args.begin(), {"/usr/bin/tmux", "-L", server});
  return RunTool(dir, args).out;
}

// The live view in a real terminal (a private tmux server): it draws the GPU and the function,
// redraws, and quits on 'q'.
TEST_F(ToolsTest, TopLiveViewInTmuxRedrawsAndQuitsOnQ) {
  if (::access("/usr/bin/tmux", X_OK) != 0) GTEST_SKIP() << "tmux is not installed";
  StartArbiter();
  FakeFunction f(dir, arb->socket(), "live",
                 {"--quota-mib", "64", "--requests", "100000", "--work-us", "1000", "--gap-us", "5000"});
  ASSERT_TRUE(WaitForClients([](const json& l) { return l.size() == 1; }));
  const std::string server = "gshare-top-test-" + std::to_string(::getpid());
  Tmux(dir, server, {"new-session", "-d", "-x", "160", "-y", "50", "-s", "top",
                     std::string(GSHARE_TOP_BIN) + " --interval 0.2 --socket " + control()});
  std::string screen;
  bool drawn = false;
  std::string first;
  for (int i = 0; i < 1500 && !drawn; ++i) {  // safety timeout: 30 s
    screen = Tmux(dir, server, {"capture-pane", "-p", "-t", "top"});
    if (screen.find("GPU 0") != std::string::npos && screen.find("live") != std::string::npos) {
      if (first.empty()) {
        first = screen;
      } else if (screen != first) {
        drawn = true;  // redrawn with new figures
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(drawn) << screen;
  EXPECT_NE(screen.find("(q to quit)"), std::string::npos) << screen;
  Tmux(dir, server, {"send-keys", "-t", "top", "q"});
  bool gone = false;
  for (int i = 0; i < 1500 && !gone; ++i) {
    gone = Tmux(dir, server, {"list-sessions"}).find("top:") == std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "gshare-top did not quit on 'q'";
  Tmux(dir, server, {"kill-server"});
}

}  // namespace
}  // namespace gshare::arbiter::testing
