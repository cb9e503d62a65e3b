// VgpuMemory under concurrent use (fake driver): application threads allocate and free while
// another thread swaps out and in; afterwards the accounting is exact and nothing leaks.
// Memory is not touched by the allocating threads (in the shim, the submission gate keeps the
// application off device memory while it is swapped out).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "fake_driver.h"
#include "gshare/memory/vgpu_memory.h"

namespace gshare::memory {
namespace {

using testing::FakeDriver;

TEST(ConcurrencyTest, AllocationsFreesAndSwapsFromManyThreads) {
  FakeDriver::Reset(8 * kGiB);
  VgpuMemoryOptions options;
  options.quota_bytes = 1 * kGiB;
  // Both kinds of segment at a quarter of the sizes of vgpu_memory_test: dedicated chunks from
  // 8 MiB, arenas of 32 MiB. The interleaving is the point, not the volume; every swap maps,
  // copies and unmaps all of it, and under TSan (which resets the shadow of every mapping) the
  // 33-MiB pieces of before made the test run for more than 15 min (docs/reliability.md).
  options.large_threshold = 8 * kMiB;
  options.arena_bytes = 32 * kMiB;
  {
    VgpuMemory mem(FakeDriver::Api(), options);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> ooms{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
      workers.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
        std::vector<CUdeviceptr> mine;
        for (int i = 0; i < 3000; ++i) {
          if (mine.size() < 20 && rng() % 2 == 0) {
            const size_t bytes = rng() % 8 == 0 ? 9 * kMiB + rng() % kMiB : 1 + rng() % 300000;
            CUdeviceptr p = 0;
            const CUresult rc = mem.Allocate(bytes, &p);
            if (rc == CUDA_SUCCESS) {
              mine.push_back(p);
            } else {
              ASSERT_EQ(rc, CUDA_ERROR_OUT_OF_MEMORY);
              ++ooms;
            }
          } else if (!mine.empty()) {
            const size_t k = rng() % mine.size();
            ASSERT_EQ(mem.Free(mine[k]), CUDA_SUCCESS);
            mine[k] = mine.back();
            mine.pop_back();
          }
          size_t free_bytes = 0, total = 0;
          mem.GetInfo(&free_bytes, &total);
          ASSERT_LE(free_bytes, total);
        }
        for (CUdeviceptr p : mine) ASSERT_EQ(mem.Free(p), CUDA_SUCCESS);
      });
    }
    // Bounded: on a many-core host an unthrottled swapper gets a turn between every two
    // operations of the workers (FIFO lock), and 12,000 full swap cycles took longer than any
    // test timeout (the H200 host, 16 cores). A short pause between cycles and a cap keep the
    // interleaving without the crawl.
    std::thread swapper([&] {
      int swaps = 0;
      while ((!stop.load() || swaps < 2) && swaps < 200) {
        ASSERT_EQ(mem.SwapOut({}, nullptr), CUDA_SUCCESS);
        ASSERT_EQ(mem.SwapIn(swaps % 2, nullptr), CUDA_SUCCESS);
        ++swaps;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
    for (auto& w : workers) w.join();
    stop = true;
    swapper.join();
    const VgpuMemoryCounters c = mem.counters();
    EXPECT_EQ(c.live_allocations, 0u);
    EXPECT_EQ(c.used_bytes, 0u);
    EXPECT_EQ(c.requested_bytes, 0u);
    EXPECT_EQ(c.physical_handles, 0u);
    EXPECT_GE(c.swap_outs, 2u);
    EXPECT_EQ(c.allocations, c.frees);
  }
  EXPECT_EQ(FakeDriver::LiveHandles(), 0u);
  EXPECT_EQ(FakeDriver::LiveReservations(), 0u);
  EXPECT_EQ(FakeDriver::DeviceUsed(0) + FakeDriver::DeviceUsed(1), 0u);
}

}  // namespace
}  // namespace gshare::memory
