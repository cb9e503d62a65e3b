// Swap engine unit tests against the fake driver: same addresses, every byte back, physical
// memory released while out, pipelined on several streams, staging reused, drain ordering,
// allocation while swapped out, swap-in onto the other device, failures that change nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "fake_driver.h"
#include "gshare/memory/vgpu_memory.h"
#include "test_patterns.h"

namespace gshare::memory {
namespace {

using testing::Checksum;
using testing::FakeDriver;
using testing::FillPattern;

struct Live {
  size_t bytes;
  uint64_t checksum;
};

class SwapFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeDriver::Reset(4 * kGiB);
    api_ = FakeDriver::Api();
    options_.quota_bytes = 2 * kGiB;
    options_.arena_bytes = 256 * kMiB;
    options_.swap_piece_bytes = 1 * kMiB;
  }
  void TearDown() override {
    EXPECT_EQ(FakeDriver::LiveHandles(), 0u);
    EXPECT_EQ(FakeDriver::LiveReservations(), 0u);
  }

  // Allocates `bytes`, fills it with a pattern, remembers its checksum.
  void AllocFilled(VgpuMemory& mem, size_t bytes, uint64_t seed) {
    CUdeviceptr p = 0;
    ASSERT_EQ(mem.Allocate(bytes, &p), CUDA_SUCCESS) << bytes;
    FillPattern(reinterpret_cast<void*>(p), bytes, seed);
    live_[p] = Live{bytes, Checksum(reinterpret_cast<void*>(p), bytes)};
  }
  void ExpectAllIntact() {
    for (const auto& [p, l] : live_) {
      ASSERT_EQ(Checksum(reinterpret_cast<void*>(p), l.bytes), l.checksum) << std::hex << p;
    }
  }
  void FreeAll(VgpuMemory& mem) {
    for (const auto& [p, l] : live_) ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
    live_.clear();
  }

  DeviceApi api_;
  VgpuMemoryOptions options_;
  std::map<CUdeviceptr, Live> live_;
};

TEST_F(SwapFakeTest, RandomPatternsSurviveRepeatedSwaps) {
  VgpuMemory mem(api_, options_);
  std::mt19937_64 rng(7);
  uint64_t seed = 1;
  uint64_t host_allocs_before_last_round = 0;
  for (int round = 0; round < 3; ++round) {
    host_allocs_before_last_round = FakeDriver::HostAllocCalls();
    // Interleave allocations from bytes to hundreds of MiB with frees (no new ones in the last
    // round, which swaps the same image again).
    for (int i = 0; round < 2 && i < 40; ++i) {
      const int kind = static_cast<int>(rng() % 20);
      size_t bytes = kind < 12   ? 1 + rng() % 4096
                     : kind < 19 ? 4096 + rng() % (6 * kMiB)
                                 : 64 * kMiB + rng() % (192 * kMiB);
      if (mem.counters().used_bytes + bytes > 600 * kMiB) bytes = 1000;
      AllocFilled(mem, bytes, seed++);
      if (!live_.empty() && rng() % 3 == 0) {
        auto it = live_.begin();
        std::advance(it, static_cast<long>(rng() % live_.size()));
        ASSERT_EQ(mem.Free(it->first), CUDA_SUCCESS);
        live_.erase(it);
      }
    }
    const uint64_t backed = mem.counters().backed_bytes;
    ASSERT_EQ(FakeDriver::DeviceUsed(0), backed);
    SwapStats out;
    ASSERT_EQ(mem.SwapOut({}, &out), CUDA_SUCCESS);
    EXPECT_EQ(out.bytes, backed);
    EXPECT_FALSE(mem.resident());
    EXPECT_EQ(FakeDriver::DeviceUsed(0), 0u);  // capacity really released
    EXPECT_EQ(FakeDriver::LiveHandles(), 0u);
    EXPECT_EQ(mem.counters().used_bytes, backed);  // still charged to the vGPU
    SwapStats in;
    ASSERT_EQ(mem.SwapIn(0, &in), CUDA_SUCCESS);
    EXPECT_EQ(in.bytes, backed);
    EXPECT_EQ(in.physical_pieces, out.physical_pieces);
    ExpectAllIntact();  // same pointers, same bytes
  }
  // The staging is pinned once per growth of the image and reused when it fits.
  EXPECT_EQ(FakeDriver::HostAllocCalls(), host_allocs_before_last_round);
  EXPECT_GE(FakeDriver::DtoHStreams().size(), 2u);
  EXPECT_GE(FakeDriver::HtoDStreams().size(), 2u);
  FreeAll(mem);
}

// The swap progress callback (the arbiter's liveness hint) hears the bytes moved so far as the
// copies complete, at least every 16 MiB: on the way out rising up to the image's size, on the
// way in (from several workers) up to the same total; an empty callback stops the reports.
TEST_F(SwapFakeTest, SwapProgressIsReportedAsTheBytesMove) {
  VgpuMemory mem(api_, options_);
  std::mutex mu;
  std::vector<uint64_t> heard;
  mem.SetSwapProgressCallback([&](uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    heard.push_back(bytes);
  });
  for (uint64_t i = 0; i < 6; ++i) AllocFilled(mem, 40 * kMiB, 100 + i);
  const uint64_t backed = mem.counters().backed_bytes;
  SwapStats out;
  ASSERT_EQ(mem.SwapOut({}, &out), CUDA_SUCCESS);
  ASSERT_GE(heard.size(), backed / (16 * kMiB)) << "a report at least every 16 MiB";
  EXPECT_TRUE(std::is_sorted(heard.begin(), heard.end()));
  EXPECT_EQ(std::adjacent_find(heard.begin(), heard.end()), heard.end()) << "each report moved";
  EXPECT_EQ(heard.back(), backed);
  heard.clear();
  SwapStats in;
  ASSERT_EQ(mem.SwapIn(0, &in), CUDA_SUCCESS);
  EXPECT_GE(heard.size(), backed / (16 * kMiB) - options_.swap_streams);
  EXPECT_EQ(*std::max_element(heard.begin(), heard.end()), backed);
  ExpectAllIntact();
  heard.clear();
  mem.SetSwapProgressCallback({});
  ASSERT_EQ(mem.SwapOut({}, &out), CUDA_SUCCESS);
  ASSERT_EQ(mem.SwapIn(0, &in), CUDA_SUCCESS);
  EXPECT_TRUE(heard.empty());
  FreeAll(mem);
}

// The staging is pinned ahead of time (PrepareStaging, off the swap's critical path), so the
// swap-out that follows pins nothing; the phases are reported; a prepare while swapped out never
// replaces the staging that holds the image; a grown footprint is prepared again.
TEST_F(SwapFakeTest, PreparedStagingIsUsedByTheNextSwapOut) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 40 * kMiB, 11);
  AllocFilled(mem, 3 * kMiB, 12);
  const uint64_t backed = mem.counters().backed_bytes;
  uint64_t pinned = 0;
  ASSERT_EQ(mem.PrepareStaging(&pinned), CUDA_SUCCESS);
  EXPECT_GE(pinned, backed);
  const uint64_t allocs_after_prepare = FakeDriver::HostAllocCalls();
  EXPECT_EQ(mem.PrepareStaging(&pinned), CUDA_SUCCESS);  // already big enough: nothing to do
  EXPECT_EQ(pinned, 0u);
  SwapStats out;
  ASSERT_EQ(mem.SwapOut([] { return CUDA_SUCCESS; }, &out), CUDA_SUCCESS);
  EXPECT_EQ(FakeDriver::HostAllocCalls(), allocs_after_prepare) << "the swap-out pinned again";
  EXPECT_EQ(out.pin_time.count(), 0);
  EXPECT_LE(out.unmap_time, out.copy_time);
  EXPECT_LE(out.drain_time + out.copy_time, out.elapsed);
  EXPECT_EQ(mem.PrepareStaging(&pinned), CUDA_SUCCESS);  // swapped out: the image stays put
  EXPECT_EQ(pinned, 0u);
  EXPECT_EQ(FakeDriver::HostAllocCalls(), allocs_after_prepare);
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  ExpectAllIntact();
  AllocFilled(mem, 64 * kMiB, 13);  // outgrows the headroom
  ASSERT_EQ(mem.PrepareStaging(&pinned), CUDA_SUCCESS);
  EXPECT_GE(pinned, mem.counters().backed_bytes);
  const uint64_t allocs_after_growth = FakeDriver::HostAllocCalls();
  ASSERT_EQ(mem.SwapOut({}, &out), CUDA_SUCCESS);
  EXPECT_EQ(FakeDriver::HostAllocCalls(), allocs_after_growth);
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  ExpectAllIntact();
  FreeAll(mem);
}

TEST_F(SwapFakeTest, DrainRunsBeforeCopiesAndItsFailureAbortsTheSwap) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 10 * kMiB, 3);
  int drains = 0;
  EXPECT_EQ(mem.SwapOut([&] { ++drains; return CUDA_ERROR_LAUNCH_TIMEOUT; }, nullptr),
            CUDA_ERROR_LAUNCH_TIMEOUT);
  EXPECT_TRUE(mem.resident());
  EXPECT_EQ(FakeDriver::DeviceUsed(0), 10 * kMiB);
  ASSERT_EQ(mem.SwapOut([&] { ++drains; return CUDA_SUCCESS; }, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(drains, 2);
  SwapStats again;
  EXPECT_EQ(mem.SwapOut({}, &again), CUDA_SUCCESS);  // already out: nothing to do
  EXPECT_EQ(again.bytes, 0u);
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  ExpectAllIntact();
  FreeAll(mem);
}

TEST_F(SwapFakeTest, DrainRunsWithAContextEvenWhenTheCallerHasNone) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 5 * kMiB, 5);
  FakeDriver::SetHasCurrentContext(false);  // e.g. the shim's control thread
  bool had_context = false;
  ASSERT_EQ(mem.SwapOut([&] { had_context = FakeDriver::HasCurrentContext(); return CUDA_SUCCESS; },
                        nullptr),
            CUDA_SUCCESS);
  EXPECT_TRUE(had_context);
  EXPECT_FALSE(FakeDriver::HasCurrentContext());  // the pushed primary context was popped
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  EXPECT_FALSE(FakeDriver::HasCurrentContext());
  FakeDriver::SetHasCurrentContext(true);
  ExpectAllIntact();
  FreeAll(mem);
}

TEST_F(SwapFakeTest, PendingStreamOrderedFreesCompleteBeforeSwapOut) {
  VgpuMemory mem(api_, options_);
  const CUstream stream = FakeDriver::AppStream(2);
  CUdeviceptr p = 0;
  ASSERT_EQ(mem.AllocateAsync(50 * kMiB, stream, &p), CUDA_SUCCESS);
  FakeDriver::HoldStream(stream);
  ASSERT_EQ(mem.FreeAsync(p, stream), CUDA_SUCCESS);
  SwapStats out;
  ASSERT_EQ(mem.SwapOut({}, &out), CUDA_SUCCESS);  // after the drain the free is complete
  EXPECT_EQ(out.bytes, 0u);
  EXPECT_EQ(mem.counters().pending_async_frees, 0u);
  EXPECT_EQ(mem.counters().used_bytes, 0u);
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  FakeDriver::ReleaseStream(stream);
}

TEST_F(SwapFakeTest, AllocateAndFreeWhileSwappedOut) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 3000, 11);
  AllocFilled(mem, 64 * kMiB, 12);
  CUdeviceptr doomed = 0;
  ASSERT_EQ(mem.Allocate(5000, &doomed), CUDA_SUCCESS);
  ASSERT_EQ(mem.SwapOut({}, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(doomed), CUDA_SUCCESS);
  CUdeviceptr small = 0, big = 0;
  ASSERT_EQ(mem.Allocate(7000, &small), CUDA_SUCCESS);
  ASSERT_EQ(mem.Allocate(40 * kMiB, &big), CUDA_SUCCESS);
  EXPECT_EQ(FakeDriver::DeviceUsed(0), 0u);  // backed only at swap-in
  CUdeviceptr too_much = 0;
  EXPECT_EQ(mem.Allocate(2 * kGiB, &too_much), CUDA_ERROR_OUT_OF_MEMORY);  // quota still holds
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  ExpectAllIntact();
  EXPECT_EQ(FakeDriver::DeviceUsed(0), mem.counters().backed_bytes);
  FillPattern(reinterpret_cast<void*>(small), 7000, 1);  // new memory is mapped and writable
  FillPattern(reinterpret_cast<void*>(big), 40 * kMiB, 2);
  ASSERT_EQ(mem.Free(small), CUDA_SUCCESS);
  ASSERT_EQ(mem.Free(big), CUDA_SUCCESS);
  FreeAll(mem);
}

TEST_F(SwapFakeTest, SwapInOntoTheOtherDevice) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 123457, 21);
  AllocFilled(mem, 100 * kMiB, 22);
  ASSERT_EQ(mem.SwapIn(1, nullptr), CUDA_ERROR_INVALID_VALUE);  // resident on device 0
  ASSERT_EQ(mem.SwapOut({}, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(mem.SwapIn(1, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(mem.counters().device, 1);
  EXPECT_EQ(FakeDriver::DeviceUsed(0), 0u);
  EXPECT_EQ(FakeDriver::DeviceUsed(1), mem.counters().backed_bytes);
  ExpectAllIntact();
  CUdeviceptr later = 0;  // new allocations follow the vGPU to its new device
  ASSERT_EQ(mem.Allocate(50 * kMiB, &later), CUDA_SUCCESS);
  EXPECT_EQ(FakeDriver::DeviceUsed(0), 0u);
  ASSERT_EQ(mem.Free(later), CUDA_SUCCESS);
  FreeAll(mem);
}

TEST_F(SwapFakeTest, FailedSwapInStaysOutAndCanBeRetried) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 30 * kMiB, 31);
  AllocFilled(mem, 1000, 32);
  AllocFilled(mem, 80 * kMiB, 33);
  ASSERT_EQ(mem.SwapOut({}, nullptr), CUDA_SUCCESS);
  FakeDriver::FailCreates(2, 1);
  EXPECT_EQ(mem.SwapIn(0, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(mem.resident());
  EXPECT_EQ(FakeDriver::DeviceUsed(0), 0u);
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  ExpectAllIntact();
  FreeAll(mem);
}

TEST_F(SwapFakeTest, CopyFailureAfterPartialReleaseRestoresEverything) {
  options_.swap_streams = 2;
  VgpuMemory mem(api_, options_);
  for (int i = 0; i < 3; ++i) AllocFilled(mem, 100 * kMiB, 50 + i);  // three release batches
  AllocFilled(mem, 777, 53);
  const uint64_t backed = mem.counters().backed_bytes;
  // Two streams: the first batch's two events complete, the second batch's wait fails after
  // the first batch was already released.
  FakeDriver::FailEventSyncAfter(2);
  const uint64_t creates_before = FakeDriver::CreateCalls();
  EXPECT_EQ(mem.SwapOut({}, nullptr), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(FakeDriver::CreateCalls() - creates_before, 2u);  // batch one (granule + chunk) undone
  EXPECT_TRUE(mem.resident());
  EXPECT_EQ(FakeDriver::DeviceUsed(0), backed);
  EXPECT_EQ(mem.counters().physical_handles, FakeDriver::LiveHandles());
  ExpectAllIntact();
  ASSERT_EQ(mem.SwapOut({}, nullptr), CUDA_SUCCESS);  // and it can swap normally afterwards
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  ExpectAllIntact();
  FreeAll(mem);
}

TEST_F(SwapFakeTest, StagingIsReleasedOnlyWhileResident) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 4 * kMiB, 41);
  ASSERT_EQ(mem.SwapOut({}, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(mem.ReleaseStaging(), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(mem.ReleaseStaging(), CUDA_SUCCESS);
  ASSERT_EQ(mem.SwapOut({}, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(mem.SwapIn(0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(FakeDriver::HostAllocCalls(), 2u);
  ExpectAllIntact();
  FreeAll(mem);
}

}  // namespace
}  // namespace gshare::memory
