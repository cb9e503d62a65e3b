// The operator tools show orphans: a live process the arbiter disconnected (tests/fault's raw
// client writing a malformed value into its channel) keeps its reservation (docs/arbiter.md);
// gshare-ctl status and gshare-top show the GPU's orphaned bytes, the orphan and the counters,
// and stop listing it once the process exits.
#include <signal.h>

#include <memory>

#include <gtest/gtest.h>

#include "tools_fixture.h"

namespace gshare::arbiter::testing {
namespace {

using nlohmann::json;

#ifdef RAW_CLIENT_BIN
bool HasOrphans(const json& status) { return status.contains("orphans") && !status["orphans"].empty(); }

TEST_F(ToolsTest, StatusAndTopShowAnOrphanUntilItsProcessExits) {
  StartArbiter();
  pid_t raw = Spawn({RAW_CLIENT_BIN, "malformed", "--socket", arb->socket(), "--quota-mib", "256"},
                    dir / "raw.out", dir / "raw.err");
  ASSERT_GT(raw, 0);
  // Whatever fails below, the raw client (it sleeps until killed) does not outlive the test.
  std::shared_ptr<void> reap(nullptr, [&raw](void*) {
    if (raw > 0 && ::kill(raw, SIGKILL) == 0) (void)WaitFor(raw, std::chrono::seconds(10));
  });
  ASSERT_TRUE(WaitForReply("status", HasOrphans)) << ReadFile(dir / "raw.out") << ReadFile(arb->log());

  const json status = CtlJson({"status"});
  ASSERT_EQ(status["orphans"].size(), 1u) << status.dump();
  const json& o = status["orphans"][0];
  EXPECT_EQ(o["pid"], raw);
  EXPECT_EQ(o["bytes"].get<uint64_t>(), 256ull << 20);
  EXPECT_EQ(o["reason"], "malformed_channel");
  EXPECT_EQ(status["gpus"][0]["orphaned_bytes"].get<uint64_t>(), 256ull << 20);

  const ToolResult human = Ctl({"status"});
  EXPECT_EQ(human.code, 0) << human.err;
  const std::string& h = human.out;
  EXPECT_NE(h.find("RESERVED  ORPHANED"), std::string::npos) << h;
  EXPECT_NE(h.find("256 MiB   256 MiB"), std::string::npos) << "reserved and orphaned\n" << h;
  EXPECT_NE(h.find("orphans (live processes disconnected by the arbiter"), std::string::npos) << h;
  EXPECT_NE(h.find("CLIENT  GPU  BYTES    REASON"), std::string::npos) << h;
  EXPECT_NE(h.find(std::to_string(raw) + "  "), std::string::npos) << h;
  EXPECT_NE(h.find("malformed_channel"), std::string::npos) << h;
  EXPECT_NE(h.find(" s ago"), std::string::npos) << h;
  EXPECT_NE(h.find("disconnected alive: order timeouts 0, unenforceable 0; orphans created 1; "
                   "released: exited 0"), std::string::npos) << h;

  const ToolResult top = RunTool(dir, {GSHARE_TOP_BIN, "--snapshot", "--socket", control()});
  ASSERT_EQ(top.code, 0) << top.err;
  const std::string& t = top.out;
  EXPECT_NE(t.find("reserved 256 MiB (orphaned 256 MiB) of"), std::string::npos) << t;
  EXPECT_NE(t.find("ORPHANS (disconnected alive"), std::string::npos) << t;
  EXPECT_NE(t.find("malformed_channel"), std::string::npos) << t;
  EXPECT_NE(t.find("orphans created 1"), std::string::npos) << t;

  ASSERT_EQ(::kill(raw, SIGKILL), 0);
  (void)WaitFor(raw, std::chrono::seconds(10));
  raw = -1;
  ASSERT_TRUE(WaitForReply("status", [](const json& s) { return !HasOrphans(s); })) << ReadFile(arb->log());
  const std::string after = Ctl({"status"}).out;
  EXPECT_EQ(after.find("orphans (live"), std::string::npos) << after;
  EXPECT_NE(after.find("released: exited 1"), std::string::npos) << after;
  const std::string top_after = RunTool(dir, {GSHARE_TOP_BIN, "--snapshot", "--socket", control()}).out;
  EXPECT_EQ(top_after.find("ORPHANS"), std::string::npos) << top_after;
  EXPECT_EQ(top_after.find("(orphaned"), std::string::npos) << top_after;
}
#endif  // RAW_CLIENT_BIN

}  // namespace
}  // namespace gshare::arbiter::testing
