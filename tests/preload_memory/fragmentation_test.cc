// The fragmentation target as a regression test: replaying the PyTorch-like trace never holds
// more physical memory than 110% of the live requested bytes plus one 2 MiB granule.
#include <gtest/gtest.h>

#include "fake_driver.h"
#include "pytorch_like_trace.h"

namespace gshare::memory {
namespace {

using testing::FakeDriver;

TEST(FragmentationTest, PytorchLikeTraceWastesAtMostTenPercentPlusOneGranule) {
  FakeDriver::Reset(64 * kGiB);
  VgpuMemoryOptions options;
  options.quota_bytes = 32 * kGiB;
  const auto ops = testing::MakePytorchLikeTrace(/*seed=*/1, /*iterations=*/16);
  testing::TraceWaste waste;
  {
    VgpuMemory mem(FakeDriver::Api(), options);
    ASSERT_EQ(testing::ReplayForWaste(mem, ops, &waste), CUDA_SUCCESS);
    EXPECT_EQ(mem.counters().backed_bytes, 0u);
  }
  EXPECT_GT(waste.peak_requested, 256 * kMiB);  // the trace is not trivial
  EXPECT_LE(waste.max_excess_over_110, static_cast<double>(2 * kMiB))
      << "peak requested " << waste.peak_requested << " backed " << waste.backed_at_peak;
  EXPECT_EQ(FakeDriver::LiveHandles(), 0u);
}

TEST(FragmentationTest, TraceIsDeterministic) {
  const auto a = testing::MakePytorchLikeTrace(5, 3);
  const auto b = testing::MakePytorchLikeTrace(5, 3);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].allocate, b[i].allocate);
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].bytes, b[i].bytes);
  }
  EXPECT_NE(testing::MakePytorchLikeTrace(6, 3).size(), 0u);
}

}  // namespace
}  // namespace gshare::memory
