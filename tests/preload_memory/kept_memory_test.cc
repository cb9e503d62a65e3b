// Kept memory (VgpuMemoryOptions::keep_freed_bytes) against the fake driver: freed memory
// stays mapped for the next allocation that lands there (no driver call for an alloc/free
// pair), within its limit and the quota, invisible to GetInfo, and gone at a swap-out.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fake_driver.h"
#include "gshare/memory/vgpu_memory.h"

namespace gshare::memory {
namespace {

using testing::FakeDriver;

class KeptMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeDriver::Reset(8 * kGiB);
    api_ = FakeDriver::Api();
  }
  void TearDown() override {
    EXPECT_EQ(FakeDriver::LiveHandles(), 0u);  // the destructor releases kept memory too
    EXPECT_EQ(FakeDriver::LiveReservations(), 0u);
  }
  VgpuMemoryOptions Options(uint64_t quota, uint64_t keep) {
    VgpuMemoryOptions o;
    o.quota_bytes = quota;
    o.arena_bytes = 256 * kMiB;
    o.keep_freed_bytes = keep;
    return o;
  }
  DeviceApi api_;
};

TEST_F(KeptMemoryTest, AllocFreePairsReuseTheSameMemoryWithoutDriverCalls) {
  VgpuMemory mem(api_, Options(1 * kGiB, 64 * kMiB));
  CUdeviceptr first = 0;
  ASSERT_EQ(mem.Allocate(1 * kMiB, &first), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(first), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().kept_bytes, 2 * kMiB);  // one granule
  EXPECT_EQ(mem.counters().used_bytes, 0u);
  size_t free_bytes = 0;
  size_t total = 0;
  mem.GetInfo(&free_bytes, &total);
  EXPECT_EQ(free_bytes, total) << "kept memory is reported free";
  const uint64_t creates = FakeDriver::CreateCalls();
  const uint64_t maps = FakeDriver::MapCalls();
  for (int i = 0; i < 100; ++i) {
    CUdeviceptr p = 0;
    ASSERT_EQ(mem.Allocate(1 * kMiB, &p), CUDA_SUCCESS);
    EXPECT_EQ(p, first);
    std::memset(reinterpret_cast<void*>(p), i, 1 * kMiB);  // mapped and writable
    ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  }
  EXPECT_EQ(FakeDriver::CreateCalls(), creates);
  EXPECT_EQ(FakeDriver::MapCalls(), maps);
  EXPECT_EQ(mem.counters().kept_reuses, 100u);
  EXPECT_EQ(FakeDriver::LiveHandles(), 1u);
}

TEST_F(KeptMemoryTest, DedicatedChunkOfTheSameSizeIsReused) {
  VgpuMemory mem(api_, Options(1 * kGiB, 128 * kMiB));
  const uint64_t creates = FakeDriver::CreateCalls();
  CUdeviceptr first = 0;
  for (int i = 0; i < 10; ++i) {
    CUdeviceptr p = 0;
    ASSERT_EQ(mem.Allocate(40 * kMiB, &p), CUDA_SUCCESS);
    if (i == 0) first = p;
    EXPECT_EQ(p, first);
    ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  }
  EXPECT_EQ(FakeDriver::CreateCalls(), creates + 1);
  EXPECT_EQ(mem.counters().kept_reuses, 9u);
  // Another size does not get it; it gets a chunk of its own.
  CUdeviceptr other = 0;
  ASSERT_EQ(mem.Allocate(50 * kMiB, &other), CUDA_SUCCESS);
  EXPECT_NE(other, first);
  ASSERT_EQ(mem.Free(other), CUDA_SUCCESS);
}

TEST_F(KeptMemoryTest, UsedPlusKeptNeverExceedsTheQuotaOrTheLimit) {
  VgpuMemory mem(api_, Options(100 * kMiB, 64 * kMiB));
  CUdeviceptr big = 0;
  ASSERT_EQ(mem.Allocate(60 * kMiB, &big), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(big), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().kept_bytes, 60 * kMiB);
  // 80 MiB fit the quota only once the kept 60 MiB are released: they are, before backing.
  CUdeviceptr p = 0;
  ASSERT_EQ(mem.Allocate(80 * kMiB, &p), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().kept_bytes, 0u);
  EXPECT_LE(FakeDriver::DeviceUsed(0), 100 * kMiB);
  // Freed with 20 MiB of room below the quota... all 80 may be kept (used is 0 again), but the
  // limit is 64 MiB: the chunk is released.
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().kept_bytes, 0u);
  EXPECT_EQ(FakeDriver::LiveHandles(), 0u);
  // Granules: 40 allocations of 2 MiB freed one by one keep at most the limit.
  std::vector<CUdeviceptr> ptrs(40);
  for (auto& q : ptrs) ASSERT_EQ(mem.Allocate(2 * kMiB, &q), CUDA_SUCCESS);
  for (auto q : ptrs) ASSERT_EQ(mem.Free(q), CUDA_SUCCESS);
  EXPECT_LE(mem.counters().kept_bytes, 64 * kMiB);
  EXPECT_GT(mem.counters().kept_bytes, 0u);
  // A quota shrink trims kept memory to what is left.
  ASSERT_EQ(mem.Allocate(30 * kMiB, &p), CUDA_SUCCESS);
  mem.SetQuota(40 * kMiB);
  EXPECT_LE(mem.counters().used_bytes + mem.counters().kept_bytes, 40 * kMiB);
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
}

TEST_F(KeptMemoryTest, SwapOutReleasesKeptMemoryAndKeepsLiveData) {
  VgpuMemory mem(api_, Options(1 * kGiB, 64 * kMiB));
  CUdeviceptr live = 0;
  CUdeviceptr freed = 0;
  CUdeviceptr chunk = 0;
  ASSERT_EQ(mem.Allocate(1 * kMiB, &live), CUDA_SUCCESS);
  ASSERT_EQ(mem.Allocate(3 * kMiB, &freed), CUDA_SUCCESS);
  ASSERT_EQ(mem.Allocate(40 * kMiB, &chunk), CUDA_SUCCESS);
  std::memset(reinterpret_cast<void*>(live), 0x5A, 1 * kMiB);
  ASSERT_EQ(mem.Free(freed), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(chunk), CUDA_SUCCESS);
  EXPECT_GT(mem.counters().kept_bytes, 40 * kMiB);
  ASSERT_EQ(mem.SwapOut({}, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().kept_bytes, 0u);
  EXPECT_EQ(FakeDriver::LiveHandles(), 0u) << "nothing stays on the device while swapped out";
  // Freed while swapped out: nothing to keep.
  CUdeviceptr extra = 0;
  ASSERT_EQ(mem.Allocate(2 * kMiB, &extra), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(extra), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().kept_bytes, 0u);
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  const auto* bytes = reinterpret_cast<const unsigned char*>(live);
  for (size_t i = 0; i < 1 * kMiB; i += 4096) ASSERT_EQ(bytes[i], 0x5A) << i;
  ASSERT_EQ(mem.Free(live), CUDA_SUCCESS);
}

TEST_F(KeptMemoryTest, OffByDefault) {
  VgpuMemory mem(api_, Options(1 * kGiB, 0));
  CUdeviceptr p = 0;
  ASSERT_EQ(mem.Allocate(1 * kMiB, &p), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().kept_bytes, 0u);
  EXPECT_EQ(FakeDriver::LiveHandles(), 0u);
  EXPECT_EQ(VgpuMemoryOptions{}.keep_freed_bytes, 0u);
}

}  // namespace
}  // namespace gshare::memory
