// Fragmentation of the vGPU memory manager on the PyTorch-like allocation trace
// (tests/preload_memory/pytorch_like_trace.h), against a naive one-mapping-per-allocation
// layout computed on the same trace. Runs on the fake driver: placement does not depend on the
// driver, and nothing is touched, so the numbers are exact and deterministic.
//
// Counters (JSON): peak_requested_MiB, backed_at_peak_MiB, waste_at_peak_pct,
// max_excess_over_110pct_MiB (target <= 2 MiB = one granule), naive_1to1_waste_at_peak_pct,
// handles_at_peak, operations.
#include <benchmark/benchmark.h>

#include <unordered_map>

#include "fake_driver.h"
#include "pytorch_like_trace.h"

namespace gshare::memory {
namespace {

using testing::FakeDriver;

// Waste of a naive layout (every allocation its own 2 MiB-rounded mapping) at its peak.
double NaiveWasteAtPeakPct(const std::vector<testing::TraceOp>& ops) {
  std::unordered_map<uint32_t, uint64_t> live;
  uint64_t requested = 0, mapped = 0, peak_requested = 0, mapped_at_peak = 0;
  for (const auto& op : ops) {
    if (op.allocate) {
      live[op.id] = op.bytes;
      requested += op.bytes;
      mapped += (op.bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
    } else {
      const uint64_t bytes = live[op.id];
      live.erase(op.id);
      requested -= bytes;
      mapped -= (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
    }
    if (requested > peak_requested) {
      peak_requested = requested;
      mapped_at_peak = mapped;
    }
  }
  return 100.0 * static_cast<double>(mapped_at_peak - peak_requested) /
         static_cast<double>(peak_requested);
}

void BM_FragmentationPytorchLikeTrace(benchmark::State& state) {
  const auto ops = testing::MakePytorchLikeTrace(/*seed=*/static_cast<uint64_t>(state.range(0)),
                                                 /*iterations=*/32);
  testing::TraceWaste waste;
  for (auto _ : state) {
    FakeDriver::Reset(64 * kGiB);
    VgpuMemoryOptions options;
    options.quota_bytes = 32 * kGiB;
    VgpuMemory mem(FakeDriver::Api(), options);
    if (testing::ReplayForWaste(mem, ops, &waste) != CUDA_SUCCESS) {
      state.SkipWithError("replay failed");
      return;
    }
  }
  const double mib = static_cast<double>(kMiB);
  state.counters["operations"] = static_cast<double>(waste.operations);
  state.counters["peak_requested_MiB"] = static_cast<double>(waste.peak_requested) / mib;
  state.counters["backed_at_peak_MiB"] = static_cast<double>(waste.backed_at_peak) / mib;
  state.counters["waste_at_peak_pct"] =
      100.0 * static_cast<double>(waste.backed_at_peak - waste.peak_requested) /
      static_cast<double>(waste.peak_requested);
  state.counters["max_excess_over_110pct_MiB"] = waste.max_excess_over_110 / mib;
  state.counters["handles_at_peak"] = static_cast<double>(waste.physical_handles_at_peak);
  state.counters["naive_1to1_waste_at_peak_pct"] = NaiveWasteAtPeakPct(ops);
}
BENCHMARK(BM_FragmentationPytorchLikeTrace)->Arg(1)->Arg(2)->Arg(3)->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Allocate/free pairs through VgpuMemory on the fake driver: the manager's own cost (the fake's
// VMM calls are a few syscalls each). Arg: bytes.
void BM_AllocFreePairFakeDriver(benchmark::State& state) {
  FakeDriver::Reset(64 * kGiB);
  VgpuMemoryOptions options;
  options.quota_bytes = 32 * kGiB;
  VgpuMemory mem(FakeDriver::Api(), options);
  const auto bytes = static_cast<size_t>(state.range(0));
  CUdeviceptr keep = 0;  // keeps the arena granule backed, as in a running application
  (void)mem.Allocate(256, &keep);
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (mem.Allocate(bytes, &p) != CUDA_SUCCESS || mem.Free(p) != CUDA_SUCCESS) {
      state.SkipWithError("allocation failed");
      return;
    }
  }
  (void)mem.Free(keep);
  state.counters["pairs_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AllocFreePairFakeDriver)->Arg(4096)->Arg(1 << 20)->Arg(64 << 20);

}  // namespace
}  // namespace gshare::memory

BENCHMARK_MAIN();
