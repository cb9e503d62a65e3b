// Unit tests of VgpuMemory against the fake driver: placement and alignment, quota, GetInfo
// movement, LookupRange, external tracking, stream-ordered reuse, no-context allocation and
// driver failures that must change nothing.
#include "gshare/memory/vgpu_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fake_driver.h"

namespace gshare::memory {
namespace {

using testing::FakeDriver;

class VgpuMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeDriver::Reset(8 * kGiB);
    api_ = FakeDriver::Api();
  }
  void TearDown() override {
    EXPECT_EQ(FakeDriver::LiveHandles(), 0u);
    EXPECT_EQ(FakeDriver::LiveReservations(), 0u);
  }
  VgpuMemoryOptions Options(uint64_t quota) {
    VgpuMemoryOptions o;
    o.quota_bytes = quota;
    o.arena_bytes = 256 * kMiB;
    return o;
  }
  DeviceApi api_;
};

TEST_F(VgpuMemoryTest, AllocationsAreAlignedAndDistinct) {
  VgpuMemory mem(api_, Options(1 * kGiB));
  std::vector<CUdeviceptr> ptrs;
  for (size_t bytes : {1ul, 7ul, 255ul, 256ul, 257ul, 4096ul, 100000ul, 3ul << 20, 40ul << 20}) {
    CUdeviceptr p = 0;
    ASSERT_EQ(mem.Allocate(bytes, &p), CUDA_SUCCESS) << bytes;
    EXPECT_EQ(p % kAllocationAlignment, 0u);
    std::memset(reinterpret_cast<void*>(p), 0xAB, bytes);  // the memory is really there
    ptrs.push_back(p);
  }
  size_t pitch = 0;
  CUdeviceptr p = 0;
  ASSERT_EQ(mem.AllocatePitch(1000, 30, 4, &p, &pitch), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 1024u);
  EXPECT_EQ(p % kPitchAlignment, 0u);
  ptrs.push_back(p);
  EXPECT_EQ(mem.AllocatePitch(1000, 30, 3, &p, &pitch), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(mem.Allocate(0, &p), CUDA_ERROR_INVALID_VALUE);
  for (CUdeviceptr q : ptrs) EXPECT_EQ(mem.Free(q), CUDA_SUCCESS);
  EXPECT_EQ(mem.Free(ptrs[0]), CUDA_ERROR_INVALID_VALUE);  // double free
  EXPECT_EQ(mem.Free(0), CUDA_SUCCESS);
  const VgpuMemoryCounters c = mem.counters();
  EXPECT_EQ(c.used_bytes, 0u);
  EXPECT_EQ(c.physical_handles, 0u);
  EXPECT_EQ(c.live_allocations, 0u);
}

TEST_F(VgpuMemoryTest, SmallAllocationsShareOneGranule) {
  VgpuMemory mem(api_, Options(1 * kGiB));
  std::vector<CUdeviceptr> ptrs(1000);
  for (auto& p : ptrs) ASSERT_EQ(mem.Allocate(1024, &p), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().physical_handles, 1u);  // 1000 KiB fit in one 2 MiB granule
  EXPECT_EQ(mem.counters().backed_bytes, 2 * kMiB);
  EXPECT_EQ(mem.counters().requested_bytes, 1000u * 1024);
  for (auto p : ptrs) ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().physical_handles, 0u);
}

TEST_F(VgpuMemoryTest, LargeAllocationsGetOneDedicatedHandle) {
  VgpuMemory mem(api_, Options(2 * kGiB));
  CUdeviceptr p = 0;
  const uint64_t before = FakeDriver::MapCalls();
  ASSERT_EQ(mem.Allocate(300 * kMiB + 5, &p), CUDA_SUCCESS);
  EXPECT_EQ(FakeDriver::MapCalls() - before, 1u);
  EXPECT_EQ(mem.counters().backed_bytes, 302 * kMiB);
  EXPECT_EQ(FakeDriver::DeviceUsed(0), 302 * kMiB);
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  EXPECT_EQ(FakeDriver::DeviceUsed(0), 0u);
}

TEST_F(VgpuMemoryTest, QuotaRefusalChangesNothing) {
  VgpuMemory mem(api_, Options(100 * kMiB));
  CUdeviceptr big = 0;
  ASSERT_EQ(mem.Allocate(90 * kMiB, &big), CUDA_SUCCESS);
  CUdeviceptr small = 0;
  ASSERT_EQ(mem.Allocate(5 * kMiB, &small), CUDA_SUCCESS);
  const VgpuMemoryCounters before = mem.counters();
  const uint64_t device_before = FakeDriver::DeviceUsed(0);
  CUdeviceptr p = 0;
  EXPECT_EQ(mem.Allocate(40 * kMiB, &p), CUDA_ERROR_OUT_OF_MEMORY);  // dedicated path
  EXPECT_EQ(mem.Allocate(8 * kMiB, &p), CUDA_ERROR_OUT_OF_MEMORY);   // arena path
  EXPECT_EQ(p, 0u);
  const VgpuMemoryCounters after = mem.counters();
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  EXPECT_EQ(after.physical_handles, before.physical_handles);
  EXPECT_EQ(after.out_of_memory, before.out_of_memory + 2);
  EXPECT_EQ(FakeDriver::DeviceUsed(0), device_before);
  // Space inside an already backed granule is still usable.
  ASSERT_EQ(mem.Allocate(512 * 1024, &p), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(big), CUDA_SUCCESS);
  ASSERT_EQ(mem.Allocate(40 * kMiB, &p), CUDA_SUCCESS);  // fits once memory was freed
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(small), CUDA_SUCCESS);
}

TEST_F(VgpuMemoryTest, HugeRequestsAreOutOfMemoryWithoutTouchingTheDriver) {
  VgpuMemory mem(api_, Options(1 * kGiB));
  CUdeviceptr p = 0;
  EXPECT_EQ(mem.Allocate(SIZE_MAX, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(mem.Allocate(SIZE_MAX - 100, &p), CUDA_ERROR_OUT_OF_MEMORY);
  size_t pitch = 0;
  EXPECT_EQ(mem.AllocatePitch(SIZE_MAX / 2, 3, 4, &p, &pitch), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(mem.AllocatePitch(SIZE_MAX - 3, 1, 4, &p, &pitch), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(mem.Allocate(1 * kGiB + 1, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(FakeDriver::LiveReservations(), 0u);
  EXPECT_EQ(FakeDriver::CreateCalls(), 0u);
  EXPECT_EQ(mem.counters().out_of_memory, 3u);
}

TEST_F(VgpuMemoryTest, GetInfoMovesWithAllocationsAndNeverUnderflows) {
  VgpuMemory mem(api_, Options(512 * kMiB));
  size_t free0 = 0, total = 0;
  mem.GetInfo(&free0, &total);
  EXPECT_EQ(total, 512 * kMiB);
  EXPECT_EQ(free0, 512 * kMiB);
  CUdeviceptr p = 0;
  ASSERT_EQ(mem.Allocate(100 * kMiB, &p), CUDA_SUCCESS);
  size_t free1 = 0;
  mem.GetInfo(&free1, nullptr);
  EXPECT_EQ(free0 - free1, 100 * kMiB);
  CUdeviceptr q = 0;
  ASSERT_EQ(mem.Allocate(1000, &q), CUDA_SUCCESS);
  size_t free2 = 0;
  mem.GetInfo(&free2, nullptr);
  EXPECT_EQ(free1 - free2, 2 * kMiB);  // one granule
  mem.SetQuota(50 * kMiB);              // shrunk below what is held
  size_t free3 = 1, total3 = 0;
  mem.GetInfo(&free3, &total3);
  EXPECT_EQ(free3, 0u);
  EXPECT_EQ(total3, 50 * kMiB);
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(q), CUDA_SUCCESS);
  mem.GetInfo(&free3, nullptr);
  EXPECT_EQ(free3, 50 * kMiB);
}

TEST_F(VgpuMemoryTest, LookupRangeReturnsTheApplicationsAllocation) {
  VgpuMemory mem(api_, Options(1 * kGiB));
  CUdeviceptr a = 0, b = 0, big = 0;
  ASSERT_EQ(mem.Allocate(1000, &a), CUDA_SUCCESS);
  ASSERT_EQ(mem.Allocate(3000, &b), CUDA_SUCCESS);
  ASSERT_EQ(mem.Allocate(64 * kMiB + 1, &big), CUDA_SUCCESS);
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_EQ(mem.LookupRange(b + 2999, &base, &size), CUDA_SUCCESS);
  EXPECT_EQ(base, b);
  EXPECT_EQ(size, 3000u);
  ASSERT_EQ(mem.LookupRange(a, &base, &size), CUDA_SUCCESS);
  EXPECT_EQ(base, a);
  EXPECT_EQ(size, 1000u);
  ASSERT_EQ(mem.LookupRange(big + 64 * kMiB, &base, &size), CUDA_SUCCESS);
  EXPECT_EQ(base, big);
  EXPECT_EQ(size, 64 * kMiB + 1);
  EXPECT_EQ(mem.LookupRange(big + 64 * kMiB + 1, &base, &size), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(mem.LookupRange(a + 1000, nullptr, nullptr), CUDA_ERROR_NOT_FOUND);  // padding
  EXPECT_EQ(mem.LookupRange(0x10, nullptr, nullptr), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(mem.Free(b), CUDA_SUCCESS);
  EXPECT_EQ(mem.LookupRange(b, nullptr, nullptr), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(mem.Free(a), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(big), CUDA_SUCCESS);
}

TEST_F(VgpuMemoryTest, ExternalMemoryCountsAgainstTheQuota) {
  VgpuMemory mem(api_, Options(100 * kMiB));
  ASSERT_EQ(mem.TrackExternal(ExternalKind::kAppVmm, 60 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(mem.TrackExternal(ExternalKind::kManaged, 50 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr p = 0;
  EXPECT_EQ(mem.Allocate(41 * kMiB, &p), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(mem.Allocate(40 * kMiB, &p), CUDA_SUCCESS);
  size_t free_bytes = 1;
  mem.GetInfo(&free_bytes, nullptr);
  EXPECT_EQ(free_bytes, 0u);
  mem.UntrackExternal(ExternalKind::kAppVmm, 1000 * kMiB);  // clamps, never underflows
  EXPECT_EQ(mem.counters().external_bytes, 0u);
  mem.GetInfo(&free_bytes, nullptr);
  EXPECT_EQ(free_bytes, 60 * kMiB);
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
}

TEST_F(VgpuMemoryTest, WorksWithNoCurrentContext) {
  FakeDriver::SetHasCurrentContext(false);
  VgpuMemory mem(api_, Options(1 * kGiB));
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(mem.Allocate(4096, &a), CUDA_SUCCESS);
  ASSERT_EQ(mem.Allocate(100 * kMiB, &b), CUDA_SUCCESS);
  EXPECT_EQ(mem.FreeAsync(a, FakeDriver::AppStream(0)), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(mem.Free(a), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(b), CUDA_SUCCESS);
}

TEST_F(VgpuMemoryTest, DriverFailureChangesNothing) {
  VgpuMemory mem(api_, Options(1 * kGiB));
  CUdeviceptr keep = 0;
  ASSERT_EQ(mem.Allocate(1 * kMiB, &keep), CUDA_SUCCESS);
  const VgpuMemoryCounters before = mem.counters();
  // An 8 MiB allocation in the arena needs 4 fresh granules: the third cuMemCreate fails.
  FakeDriver::FailCreates(2, 1);
  CUdeviceptr p = 0;
  EXPECT_EQ(mem.Allocate(8 * kMiB, &p), CUDA_ERROR_OUT_OF_MEMORY);
  FakeDriver::FailCreates(0, 1);
  EXPECT_EQ(mem.Allocate(100 * kMiB, &p), CUDA_ERROR_OUT_OF_MEMORY);
  const VgpuMemoryCounters after = mem.counters();
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.physical_handles, before.physical_handles);
  EXPECT_EQ(FakeDriver::LiveHandles(), before.physical_handles);
  EXPECT_EQ(FakeDriver::LiveReservations(), 1u);  // the arena only
  ASSERT_EQ(mem.Free(keep), CUDA_SUCCESS);
}

TEST_F(VgpuMemoryTest, DeviceCapacityIsAnError_NotACrash) {
  FakeDriver::Reset(64 * kMiB);
  VgpuMemory mem(api_, Options(1 * kGiB));  // quota larger than the device
  CUdeviceptr p = 0;
  EXPECT_EQ(mem.Allocate(100 * kMiB, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(mem.counters().used_bytes, 0u);
}

TEST_F(VgpuMemoryTest, StreamOrderedFreeIsReusedOnlyAfterTheStreamPassesIt) {
  VgpuMemory mem(api_, Options(64 * kMiB));
  const CUstream stream = FakeDriver::AppStream(1);
  CUdeviceptr a = 0;
  ASSERT_EQ(mem.AllocateAsync(40 * kMiB, stream, &a), CUDA_SUCCESS);
  FakeDriver::HoldStream(stream);  // the stream has not reached the free yet
  ASSERT_EQ(mem.FreeAsync(a, stream), CUDA_SUCCESS);
  EXPECT_EQ(mem.FreeAsync(a, stream), CUDA_ERROR_INVALID_VALUE);  // already freed
  EXPECT_EQ(mem.counters().pending_async_frees, 1u);
  CUdeviceptr b = 0;
  // Not reusable yet: the quota still holds the 40 MiB.
  EXPECT_EQ(mem.AllocateAsync(40 * kMiB, stream, &b), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(mem.AllocateAsync(1 * kMiB, stream, &b), CUDA_SUCCESS);
  EXPECT_FALSE(b >= a && b < a + 40 * kMiB);
  EXPECT_EQ(mem.LookupRange(a, nullptr, nullptr), CUDA_ERROR_NOT_FOUND);
  FakeDriver::ReleaseStream(stream);
  size_t free_bytes = 0;
  mem.GetInfo(&free_bytes, nullptr);  // polls completed frees
  EXPECT_EQ(mem.counters().pending_async_frees, 0u);
  EXPECT_EQ(free_bytes, 62 * kMiB);
  CUdeviceptr c = 0;
  ASSERT_EQ(mem.AllocateAsync(40 * kMiB, stream, &c), CUDA_SUCCESS);
  ASSERT_EQ(mem.FreeAsync(c, stream), CUDA_SUCCESS);
  ASSERT_EQ(mem.FreeAsync(b, stream), CUDA_SUCCESS);
  mem.ReclaimCompletedFrees();
  EXPECT_EQ(mem.counters().live_allocations, 0u);
  EXPECT_EQ(mem.counters().used_bytes, 0u);
}

// Every quota check sees completed stream-ordered frees, not only Allocate and GetInfo: external
// memory (cuMemCreate, cuMemAllocManaged, IPC imports) fits once the stream passed the frees,
// without a GetInfo first (issue 17: cuMemCreate was refused after the whole quota had been
// freed with cuMemFreeAsync).
TEST_F(VgpuMemoryTest, CompletedStreamOrderedFreesAreSeenByExternalQuotaChecks) {
  VgpuMemory mem(api_, Options(64 * kMiB));
  const CUstream stream = FakeDriver::AppStream(1);
  std::vector<CUdeviceptr> pieces(4);
  for (CUdeviceptr& p : pieces) ASSERT_EQ(mem.AllocateAsync(16 * kMiB, stream, &p), CUDA_SUCCESS);
  FakeDriver::HoldStream(stream);
  for (CUdeviceptr p : pieces) ASSERT_EQ(mem.FreeAsync(p, stream), CUDA_SUCCESS);
  EXPECT_EQ(mem.TrackExternal(ExternalKind::kAppVmm, 16 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  FakeDriver::ReleaseStream(stream);  // the stream passes the frees
  EXPECT_EQ(mem.TrackExternal(ExternalKind::kAppVmm, 64 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().pending_async_frees, 0u);
  mem.UntrackExternal(ExternalKind::kAppVmm, 64 * kMiB);
}

// cuMemGetInfo's view bounded by the GPU: a total never above the device's, free never above what
// the device can still give plus what the vGPU keeps mapped for reuse (issue 17: an 8 GiB quota
// on a 4 GiB GPU reported 4 GiB free of 8 once the GPU was full).
TEST_F(VgpuMemoryTest, InfoOnTheDeviceNeverPromisesMoreThanQuotaAndDevice) {
  VgpuMemoryOptions o = Options(8 * kGiB);
  o.keep_freed_bytes = 256 * kMiB;
  VgpuMemory mem(api_, o);
  size_t free_bytes = 0, total = 0;
  mem.GetInfoOnDevice(4 * kGiB, 4 * kGiB, &free_bytes, &total);
  EXPECT_EQ(total, 4 * kGiB);
  EXPECT_EQ(free_bytes, 4 * kGiB);
  CUdeviceptr p = 0;
  ASSERT_EQ(mem.Allocate(64 * kMiB, &p), CUDA_SUCCESS);
  mem.GetInfoOnDevice(0, 4 * kGiB, &free_bytes, &total);  // the GPU is full
  EXPECT_EQ(free_bytes, 0u);
  mem.GetInfo(&free_bytes, &total);  // the quota view alone still says 8 GiB - 64 MiB
  EXPECT_EQ(free_bytes, 8 * kGiB - 64 * kMiB);
  ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);  // kept mapped: the vGPU's own, free for it
  ASSERT_EQ(mem.counters().kept_bytes, 64 * kMiB);
  mem.GetInfoOnDevice(0, 4 * kGiB, &free_bytes, &total);
  EXPECT_EQ(free_bytes, 64 * kMiB);
  mem.GetInfoOnDevice(16 * kGiB, 16 * kGiB, &free_bytes, &total);  // a quota below the GPU
  EXPECT_EQ(total, 8 * kGiB);
  EXPECT_EQ(free_bytes, 8 * kGiB);
}

}  // namespace
}  // namespace gshare::memory
