// `gshare-ctl drain` with two GPUs against a real gshare-arbiter and real function processes:
// the policy learns the GPU is unavailable (GpuUnavailable), moves the functions on it to the
// other GPU, and they keep being served while the GPU stays drained; undrain makes it usable
// again (GpuAvailable).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tools_fixture.h"

namespace gshare::arbiter::testing {
namespace {

using nlohmann::json;

std::vector<std::string> Steady(int requests) {
  return {"--quota-mib", "256", "--slo-ms", "200", "--requests", std::to_string(requests),
          "--work-us", "1000", "--gap-us", "10000"};
}

TEST_F(ToolsTest, DrainMovesFunctionsToTheOtherGpuAndTheyKeepServing) {
  StartArbiter({"--gpu-count", "2"});
  FakeFunction a(dir, arb->socket(), "a", Steady(400));
  FakeFunction b(dir, arb->socket(), "b", Steady(400));
  ASSERT_TRUE(WaitForClients([](const json& l) {
    return l.size() == 2 && l[0].value("bursts", 0) > 0 && l[1].value("bursts", 0) > 0 &&
           l[0]["state"] == "resident";
  })) << ReadFile(arb->log());
  const int from = CtlJson({"clients"})["clients"][0]["gpu"].get<int>();
  const int to = 1 - from;
  const ToolResult drained = Ctl({"drain", std::to_string(from)});
  ASSERT_EQ(drained.code, 0) << drained.err;

  // Both end up resident on the other GPU and keep completing bursts there.
  uint64_t bursts_then = 0;
  EXPECT_TRUE(WaitForClients([&](const json& l) {
    if (l.size() != 2) return false;
    bursts_then = 0;
    for (const json& c : l) {
      if (c["gpu"] != to || c["state"] != "resident") return false;
      bursts_then += c["bursts"].get<uint64_t>();
    }
    return true;
  })) << ReadFile(arb->log());
  EXPECT_TRUE(WaitForClients([&](const json& l) {
    uint64_t now = 0;
    for (const json& c : l) now += c["bursts"].get<uint64_t>();
    return l.size() == 2 && now >= bursts_then + 10;
  })) << ReadFile(arb->log());
  const json status = CtlJson({"status"});
  EXPECT_EQ(status["gpus"][from]["drained"], true) << status.dump();
  EXPECT_EQ(status["gpus"][from]["reserved_bytes"], 0) << status.dump();

  // Every request is served (correctly) while the GPU is still drained.
  EXPECT_EQ(a.Wait(), 0) << a.output() << ReadFile(arb->log());
  EXPECT_EQ(b.Wait(), 0) << b.output();
  EXPECT_EQ(CtlJson({"status"})["gpus"][from]["drained"], true);

  // Undrained, the GPU takes functions again: a new one is served.
  ASSERT_EQ(Ctl({"undrain", std::to_string(from)}).code, 0);
  FakeFunction c(dir, arb->socket(), "c", Steady(30));
  EXPECT_EQ(c.Wait(), 0) << c.output() << ReadFile(arb->log());
}

}  // namespace
}  // namespace gshare::arbiter::testing
