// Unit tests of Telemetry's hooks (arbiter/src/telemetry.h): the first-grant wait, held time and
// slice ends, each completed burst's latency against its SLO (misses kept, the newest 32), and
// swaps by direction; what /metrics, status and the summary show is built from these.
#include "telemetry.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

constexpr uint64_t kMs = 1'000'000;
const GpuIndex kG1{1};

Release Hold(uint64_t grant_ns, uint64_t now_ns, bool burst_ended, uint32_t slo_ms = 100) {
  Release r;
  r.client = 7;
  r.series = SeriesKey("bert", "tenants", "bert-0");
  r.gpu = kG1;
  r.ordinal = DeviceOrdinal{3};
  r.slo_ms = slo_ms;
  r.grant_ns = grant_ns;
  r.now_ns = now_ns;
  r.burst_ended = burst_ended;
  r.burst_end_ns = now_ns;
  return r;
}

TEST(TelemetryHooks, AFirstGrantAfterMoreThanAMillisecondIsAWait) {
  Telemetry t;
  ClientTelemetry tel;
  Telemetry::BurstStarted(tel, 10 * kMs);
  t.Granted(tel, kG1, 10 * kMs + kMs / 2);  // 0.5 ms: not a wait
  EXPECT_EQ(tel.waits, 0U);
  EXPECT_EQ(tel.burst_wait_ns, kMs / 2);
  t.Granted(tel, kG1, 20 * kMs);  // a second grant of the same burst adds no wait
  EXPECT_EQ(tel.wait_ns, kMs / 2);
  Telemetry::BurstStarted(tel, 30 * kMs);
  t.Granted(tel, kG1, 35 * kMs);
  EXPECT_EQ(tel.waits, 1U);
  EXPECT_EQ(tel.wait_ns, kMs / 2 + 5 * kMs);
  ASSERT_EQ(t.gpus.size(), 2U);  // the tables reach the GPU granted
  EXPECT_EQ(t.gpus[kG1].handoffs, 3U);
}

TEST(TelemetryHooks, ABurstEndCountsItsLatencyAgainstItsSlo) {
  Telemetry t;
  ClientTelemetry tel;
  Telemetry::BurstStarted(tel, 1 * kMs);
  t.Granted(tel, kG1, 2 * kMs);
  t.Released(tel, Hold(2 * kMs, 51 * kMs, /*burst_ended=*/true));  // 50 ms <= 100 ms
  Telemetry::BurstStarted(tel, 100 * kMs);
  t.Granted(tel, kG1, 100 * kMs);
  t.Released(tel, Hold(100 * kMs, 250 * kMs, true));  // 150 ms > 100 ms
  EXPECT_EQ(tel.bursts, 2U);
  EXPECT_EQ(tel.slo_met, 1U);
  EXPECT_EQ(tel.slo_missed, 1U);
  EXPECT_EQ(tel.last_latency_ns, 150 * kMs);
  EXPECT_EQ(tel.held_ns, 49 * kMs + 150 * kMs);
  const FunctionTelemetry& f = t.functions.at(SeriesKey("bert", "tenants", "bert-0"));
  EXPECT_EQ(f.bursts, 2U);
  EXPECT_EQ(f.slo_met, 1U);
  EXPECT_EQ(f.slo_missed, 1U);
  EXPECT_EQ(f.burst.count(), 2U);
  EXPECT_EQ(f.wait.count(), 2U);
  ASSERT_EQ(t.misses.size(), 1U);
  EXPECT_EQ(t.misses[0].latency_ns, 150 * kMs);
  EXPECT_EQ(t.misses[0].gpu, DeviceOrdinal{3});  // the CUDA ordinal, for what operators see
  EXPECT_EQ(t.misses[0].function, "bert");
  EXPECT_EQ(t.recent[kG1].size(), 2U);
}

TEST(TelemetryHooks, ASliceEndIsNoRequestAndMissesKeepTheNewest) {
  Telemetry t;
  ClientTelemetry tel;
  Telemetry::BurstStarted(tel, 1 * kMs);
  t.Released(tel, Hold(1 * kMs, 10 * kMs, /*burst_ended=*/false));
  EXPECT_EQ(t.gpus[kG1].slices_expired, 1U);
  EXPECT_EQ(tel.bursts, 0U);
  EXPECT_TRUE(t.functions.empty());
  for (uint64_t i = 0; i < Telemetry::kRecentMisses + 5; ++i) {
    const uint64_t start = (i + 1) * 1000 * kMs;
    Telemetry::BurstStarted(tel, start);
    t.Released(tel, Hold(start, start + 200 * kMs + i, true));
  }
  ASSERT_EQ(t.misses.size(), Telemetry::kRecentMisses);
  EXPECT_EQ(t.misses.back().latency_ns, 200 * kMs + Telemetry::kRecentMisses + 4);
  // No SLO: no verdict either way.
  Telemetry::BurstStarted(tel, 1 * kMs);
  const uint64_t met = tel.slo_met, missed = tel.slo_missed, bursts = tel.bursts;
  t.Released(tel, Hold(1 * kMs, 500 * kMs, true, /*slo_ms=*/0));
  EXPECT_EQ(tel.bursts, bursts + 1);
  EXPECT_EQ(tel.slo_met, met);
  EXPECT_EQ(tel.slo_missed, missed);
}

TEST(TelemetryHooks, SwapsAreCountedByDirection) {
  Telemetry t;
  ClientTelemetry tel;
  t.SwapDone(tel, kG1, SwapDirection::kOut, 64 << 20, 5 * kMs);
  t.SwapDone(tel, kG1, SwapDirection::kIn, 64 << 20, 6 * kMs);
  t.SwapDone(tel, kG1, SwapDirection::kIn, 32 << 20, 3 * kMs);
  const GpuTelemetry& g = t.gpus[kG1];
  EXPECT_EQ(g.swaps[static_cast<size_t>(SwapDirection::kIn)], 2U);
  EXPECT_EQ(g.swaps[static_cast<size_t>(SwapDirection::kOut)], 1U);
  EXPECT_EQ(g.swap_bytes[static_cast<size_t>(SwapDirection::kIn)], 96ULL << 20);
  EXPECT_EQ(g.swap_time[static_cast<size_t>(SwapDirection::kIn)].count(), 2U);
  EXPECT_EQ(tel.swaps_in, 2U);
  EXPECT_EQ(tel.swaps_out, 1U);
  EXPECT_EQ(tel.swap_bytes, 160ULL << 20);
}

}  // namespace
}  // namespace gshare::arbiter
