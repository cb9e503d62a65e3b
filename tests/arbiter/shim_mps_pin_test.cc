// An MPS client's memory stays on its GPU (issue 20, item 2; docs/arbiter.md, "Co-running"),
// with real processes: a real gshare-arbiter on simcuda with GPU 0 marked for co-running runs
// its private MPS daemon (simcuda-mps-control); unmodified programs under the shim (tests/
// preload's preload_probe, "swap" mode: checksummed blocks, verified on request) come up as MPS
// clients of it, and the real gshare-ctl asks for what would take an MPS client's memory off
// the GPU:
//  - `gshare-ctl evict` of an MPS client fails (exit 1) with the reason, and its memory stays
//    resident (no swap-out counted for it, mps_pins_refused counted), its data intact;
//  - `gshare-ctl drain` of the GPU lists the MPS client as staying (mps_clients_staying), moves
//    the other (non-MPS) vGPU off, leaves the MPS client resident; undrain restores service and
//    both programs' data is intact.
// Every wait is a safety net (polls of replies and counters), never a measurement.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "gshare/arbiter/control_client.h"
#include "shim_mps_fixture.h"
#include "shim_test_env.h"
#include "swap_probe.h"
#include "test_util.h"

namespace gshare::arbiter::testing {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint64_t kQuotaBytes = 200ULL << 20;
// An MPS client's context at a 50% share as CorunArbiterArgs sizes them (2 MiB + 262 MiB x 50%),
// counted beside its quota (docs/arbiter.md, "MPS context memory").
constexpr uint64_t kContext = 133ULL << 20;

class ShimMpsPin : public ShimMpsArbiter {
 protected:
  // A swap-mode probe under the shim: an MPS client of the arbiter's daemon (`mps`), or pointed
  // at a pipe directory no daemon serves (it comes up without MPS: an ordinary vGPU).
  std::unique_ptr<test::SwapProbe> StartProbe(const std::string& name, bool mps, uint32_t seed) {
    std::vector<std::string> env =
        ShimEnv(simcuda, arb.socket(), "200MiB", name, dir / (name + ".log"));
    AddMpsEnv(env, dir, mps, 50);
    auto p = std::make_unique<test::SwapProbe>(PROBE_BIN, seed, 6, 64, EnvMap(env), LineWait());
    EXPECT_TRUE(p->ready()) << p->ready_line() << ReadFile(dir / (name + ".log"));
    return p;
  }
};

TEST_F(ShimMpsPin, EvictOfAnMpsClientFailsAndItsMemoryStaysResidentWithItsData) {
  auto m1 = StartProbe("mps-1", true, 11);
  auto m2 = StartProbe("mps-2", true, 12);
  ASSERT_TRUE(m1->ready() && m2->ready());
  for (const char* name : {"mps-1", "mps-2"}) {
    const json c = ClientWhen(name, [](const json& e) { return e.value("state", "") == "resident"; });
    ASSERT_TRUE(c.is_object()) << name << ReadFile(arb.log());
    EXPECT_EQ(c.value("mps_share", 0), 50) << c.dump();  // both MPS clients, of one uid
    EXPECT_EQ(c.value("state", ""), "resident") << c.dump();
  }
  EXPECT_TRUE(m1->Verify().intact());
  EXPECT_TRUE(m2->Verify().intact());
  EXPECT_EQ(Counter("mps_pins_refused"), 0u);

  const ToolResult evict = Ctl({"evict", "mps-1"});
  EXPECT_EQ(evict.code, 1) << evict.out << evict.err;
  EXPECT_NE(evict.err.find("MPS client: its memory stays on its GPU"), std::string::npos)
      << evict.out << evict.err;
  EXPECT_EQ(Counter("mps_pins_refused"), 1u) << ReadFile(arb.log());
  // --json: the same refusal as a reply.
  const ToolResult as_json = Ctl({"--json", "evict", "mps-1"});
  EXPECT_NE(as_json.code, 0);
  EXPECT_EQ(Counter("mps_pins_refused"), 2u);

  // Still resident on GPU 0, never ordered out; its data (and its co-runner's) intact.
  const json c = Client("mps-1");
  EXPECT_EQ(c.value("state", ""), "resident") << c.dump();
  EXPECT_EQ(c.value("gpu", -1), 0) << c.dump();
  EXPECT_EQ(c.value("swaps_out", 1), 0) << c.dump();
  const json status = Call({{"cmd", "status"}});
  // Their quotas and their contexts.
  EXPECT_EQ(status["gpus"][0].value("mps_context_bytes", uint64_t{0}), 2 * kContext)
      << status.dump();
  EXPECT_EQ(status["gpus"][0].value("reserved_bytes", uint64_t{0}), 2 * kQuotaBytes + 2 * kContext)
      << status.dump();
  const test::Verified v1 = m1->Verify();
  EXPECT_TRUE(v1.intact()) << v1.line << ReadFile(dir / "mps-1.log");
  EXPECT_EQ(v1.pointers, m1->pointers());  // at the same addresses
  EXPECT_TRUE(m2->Verify().intact());
  EXPECT_EQ(m1->Quit(ExitWait()), 0) << m1->process().err();
  EXPECT_EQ(m2->Quit(ExitWait()), 0) << m2->process().err();

  const json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["swap_outs"], 0) << summary.dump();
  EXPECT_EQ(summary["mps_pins_refused"], 2) << summary.dump();
  EXPECT_EQ(summary["invariant_violations"], 0) << summary.dump();
}

TEST_F(ShimMpsPin, DrainLeavesTheMpsClientListedAndMovesTheOtherVgpuOff) {
  auto m = StartProbe("mps", true, 21);
  auto n = StartProbe("plain", false, 22);  // no daemon at its pipe directory: not an MPS client
  ASSERT_TRUE(m->ready() && n->ready());
  const json mc = ClientWhen("mps", [](const json& e) { return e.value("state", "") == "resident"; });
  const json nc = ClientWhen("plain", [](const json& e) { return e.value("state", "") == "resident"; });
  ASSERT_TRUE(mc.is_object() && nc.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(mc.value("mps_share", 0), 50) << mc.dump();
  EXPECT_EQ(nc.value("mps_share", -1), 0) << nc.dump();
  EXPECT_TRUE(m->Verify().intact());
  EXPECT_TRUE(n->Verify().intact());

  const ToolResult drained = Ctl({"--json", "drain", "0"});
  ASSERT_EQ(drained.code, 0) << drained.out << drained.err;
  const json reply = json::parse(drained.out, nullptr, false);
  ASSERT_TRUE(reply.is_object()) << drained.out;
  EXPECT_EQ(reply.value("mps_clients_staying", json()), json::array({mc["client"]})) << reply.dump();
  EXPECT_EQ(reply.value("resident_clients", -1), 1) << reply.dump();  // only the plain vGPU moves
  EXPECT_NE(reply.value("note", "").find("MPS clients stay"), std::string::npos) << reply.dump();

  // The plain vGPU is swapped off the GPU; the MPS client stays resident there, never ordered
  // out. (Polled: the plain one's swap-out completes once it acknowledges the order.)
  const json gone = ClientWhen("plain", [](const json& e) {
    return e.value("state", "") != "resident" && e.value("swaps_out", 0) >= 1;
  });
  EXPECT_NE(gone.value("state", ""), "resident") << gone.dump() << ReadFile(arb.log());
  const json stayed = Client("mps");
  EXPECT_EQ(stayed.value("state", ""), "resident") << stayed.dump();
  EXPECT_EQ(stayed.value("swaps_out", 1), 0) << stayed.dump();
  json status = Call({{"cmd", "status"}});
  EXPECT_EQ(status["gpus"][0].value("drained", false), true) << status.dump();
  // What stays: the MPS client's quota and its context.
  EXPECT_EQ(status["gpus"][0].value("reserved_bytes", uint64_t{0}), kQuotaBytes + kContext)
      << status.dump();
  EXPECT_GE(status["counters"].value("mps_pins_refused", 0), 1) << status.dump();
  // The human reply says who stays.
  const ToolResult again = Ctl({"drain", "0"});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("MPS client(s) staying: " + std::to_string(mc["client"].get<int>())),
            std::string::npos)
      << again.out;

  // Undrain: both are served again, with their data intact at the same addresses.
  const ToolResult undrained = Ctl({"undrain", "0"});
  ASSERT_EQ(undrained.code, 0) << undrained.err;
  const test::Verified vm = m->Verify();
  EXPECT_TRUE(vm.intact()) << vm.line << ReadFile(dir / "mps.log");
  EXPECT_EQ(vm.pointers, m->pointers());
  const test::Verified vn = n->Verify();
  EXPECT_TRUE(vn.intact()) << vn.line << ReadFile(dir / "plain.log");
  EXPECT_EQ(vn.pointers, n->pointers());
  EXPECT_EQ(Client("plain").value("state", ""), "resident");
  status = Call({{"cmd", "status"}});
  EXPECT_EQ(status["gpus"][0].value("drained", true), false) << status.dump();
  EXPECT_EQ(m->Quit(ExitWait()), 0) << m->process().err();
  EXPECT_EQ(n->Quit(ExitWait()), 0) << n->process().err();

  const json summary = arb.Stop();
  ASSERT_TRUE(summary.is_object()) << ReadFile(arb.log());
  EXPECT_EQ(summary["swap_outs"], 1) << summary.dump();  // the plain vGPU's, by the drain
  EXPECT_GE(summary["swap_ins"].get<int>(), 1) << summary.dump();
  EXPECT_EQ(summary["invariant_violations"], 0) << summary.dump();
}

}  // namespace
}  // namespace gshare::arbiter::testing
