// Multi-process test of the holding bound (docs/arbiter.md, "Fairness: how long a tenant holds
// a GPU others wait for"): the real gshare-arbiter with its default policy (aggressive) and two
// arbiter_fake_function processes on one GPU — a batch tenant that never idles (back-to-back
// work, yielding at every preemption) and an equal tenant with short requests and a 50 ms SLO.
// Issue 16 item 11: the batch tenant won every re-grant and the other completed one request in
// 5 s; now they alternate.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "fake_function_util.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::seconds;

TEST(ArbiterFairness, NeverIdleTenantDoesNotStarveAnEqualTenant) {
  TempDir dir;
  ArbiterProcess arb(dir, {"--gpu-memory", "1GiB", "--libcuda", "/nonexistent/libcuda.so.1",
                           "--slice", "20ms", "--policy", "aggressive"});
  ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  const std::string shared = MakeSharedFile(dir);
  // About 80 minutes of back-to-back 5 ms requests: one burst that never ends in this test.
  const Function batch = StartFunction(dir, arb, "batch",
                                       {"--quota-mib", "128", "--slo-ms", "50", "--requests",
                                        "1000000", "--submissions", "1", "--work-us", "5000",
                                        "--gap-us", "0", "--shared", shared});
  constexpr int kRequests = 40;
  const auto t0 = std::chrono::steady_clock::now();
  const Function honest = StartFunction(
      dir, arb, "honest",
      {"--quota-mib", "128", "--slo-ms", "50", "--requests", std::to_string(kRequests),
       "--submissions", "2", "--work-us", "2000", "--gap-us", "5000", "--start-delay-us",
       "500000", "--shared", shared});
  // Before the bound it waited seconds for some requests (the issue saw one request in 5 s).
  // Now it alternates with the batch's 20 ms slices (a request every ~25 ms); 20 s is only a
  // safety net.
  const int status = WaitFor(honest.pid, Scaled(seconds(20)));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - 0.5;
  // The batch tenant was still running: the honest one was served beside it, not after it.
  int batch_status = 0;
  const bool batch_running = ::waitpid(batch.pid, &batch_status, WNOHANG) == 0;
  ::kill(batch.pid, SIGKILL);
  (void)WaitFor(batch.pid, Scaled(seconds(30)));
  ASSERT_EQ(ExitCode(status), 0) << "honest tenant not done in 20 s\n"
                                 << ReadFile(honest.out) << ReadFile(arb.log());
  EXPECT_TRUE(batch_running) << ReadFile(batch.out);
  const auto report = LastJsonLine(honest.out);
  ASSERT_TRUE(report.is_object()) << ReadFile(honest.out);
  EXPECT_EQ(report["overlaps"], 0);
  EXPECT_EQ(report["not_resident"], 0);
  const double max_wait_ms = report.value("max_wait_us", 0) / 1000.0;
  std::printf("honest tenant: %d requests in %.2f s (%.1f/s), longest wait for the GPU %.1f ms\n",
              kRequests, elapsed, kRequests / elapsed, max_wait_ms);
  // Generous deadline-style bounds (measured on a loaded 2-core machine: 28-41/s, longest
  // waits 25-157 ms, about a slice plus the handoff; before the bound 4/s and 2.7 s). A wait
  // is bounded by the batch's current slice.
  EXPECT_LE(max_wait_ms, 1000.0 * TimeScale());
  EXPECT_LE(elapsed, 6.0 * TimeScale()) << "fewer than ~7 requests per second";
  ASSERT_TRUE(arb.Stop().is_object()) << ReadFile(arb.log());

  // The batch tenant is not starved either: it is granted again after the honest one's turns.
  uint32_t batch_id = 0, honest_id = 0;
  int batch_grants_after = 0, honest_grants = 0;
  for (const auto& e : ReadEvents(arb.events())) {
    if (e.type == shm::EventType::kRegister && e.args[2] == static_cast<uint64_t>(batch.pid))
      batch_id = e.client_id;
    if (e.type == shm::EventType::kRegister && e.args[2] == static_cast<uint64_t>(honest.pid))
      honest_id = e.client_id;
    if (e.type != shm::EventType::kGrant || honest_id == 0) continue;
    if (e.client_id == honest_id) ++honest_grants;
    if (e.client_id == batch_id && honest_grants > 0) ++batch_grants_after;
  }
  EXPECT_GE(honest_grants, kRequests / 2);
  EXPECT_GE(batch_grants_after, kRequests / 2);
}

}  // namespace
}  // namespace gshare::arbiter::testing
