// Unit tests of the best-fit range allocator: alignment, best fit, coalescing, invariants under
// random traffic.
#include "range_allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace gshare::memory {
namespace {

TEST(RangeAllocatorTest, AllocatesAlignedAndRefusesWhenFull) {
  RangeAllocator ranges(4096);
  auto a = ranges.Allocate(100, 256);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a % 256, 0u);
  auto b = ranges.Allocate(3000, 512);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*b % 512, 0u);
  EXPECT_FALSE(ranges.Allocate(4096, 256).has_value());
  EXPECT_FALSE(ranges.Allocate(0, 256).has_value());
  EXPECT_FALSE(ranges.Allocate(16, 3).has_value());
  EXPECT_TRUE(ranges.CheckInvariants());
}

TEST(RangeAllocatorTest, PicksTheSmallestHoleThatFits) {
  RangeAllocator ranges(10000);
  const uint64_t a = *ranges.Allocate(1000, 1);
  const uint64_t b = *ranges.Allocate(100, 1);
  const uint64_t c = *ranges.Allocate(300, 1);
  const uint64_t d = *ranges.Allocate(100, 1);
  (void)b;
  (void)d;
  ranges.Free(a, 1000);  // hole of 1000 at 0
  ranges.Free(c, 300);   // hole of 300 between b and d
  EXPECT_EQ(*ranges.Allocate(250, 1), c);  // best fit, not first fit
  EXPECT_TRUE(ranges.CheckInvariants());
}

TEST(RangeAllocatorTest, FreeingEverythingCoalescesToOneRange) {
  RangeAllocator ranges(1 << 20);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  for (uint64_t size = 256; size < 20000; size += 777) {
    live.emplace_back(*ranges.Allocate(size, 256), size);
  }
  // Free in an interleaved order so both-side merges happen.
  for (size_t i = 0; i < live.size(); i += 2) ranges.Free(live[i].first, live[i].second);
  for (size_t i = 1; i < live.size(); i += 2) ranges.Free(live[i].first, live[i].second);
  EXPECT_TRUE(ranges.CheckInvariants());
  EXPECT_EQ(ranges.free_ranges(), 1u);
  EXPECT_TRUE(ranges.empty());
  EXPECT_EQ(ranges.largest_free(), uint64_t{1} << 20);
}

TEST(RangeAllocatorTest, RandomTrafficKeepsInvariantsAndNeverOverlaps) {
  std::mt19937_64 rng(42);
  RangeAllocator ranges(64ull << 20);
  std::map<uint64_t, uint64_t> live;  // offset -> size
  uint64_t live_bytes = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const uint64_t size = 1 + rng() % (1u << (4 + rng() % 16));
      const uint64_t align = uint64_t{256} << (rng() % 2);
      auto off = ranges.Allocate(size, align);
      if (!off) continue;
      ASSERT_EQ(*off % align, 0u);
      ASSERT_LE(*off + size, ranges.capacity());
      auto next = live.lower_bound(*off);
      if (next != live.end()) {
        ASSERT_LE(*off + size, next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, *off);
      }
      live[*off] = size;
      live_bytes += size;
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      ranges.Free(it->first, it->second);
      live_bytes -= it->second;
      live.erase(it);
    }
    if (step % 1000 == 0) {
      ASSERT_TRUE(ranges.CheckInvariants());
    }
    // Alignment padding goes back to the free set, so allocated bytes == live bytes.
    ASSERT_EQ(ranges.capacity() - ranges.free_bytes(), live_bytes);
  }
  for (const auto& [off, size] : live) ranges.Free(off, size);
  EXPECT_TRUE(ranges.empty());
  EXPECT_TRUE(ranges.CheckInvariants());
}

}  // namespace
}  // namespace gshare::memory
