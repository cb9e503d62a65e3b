// Unit tests of the arbiter's GPU names (arbiter/src/gpu_ids.h): a GPU index and a device
// ordinal are different types that neither convert into each other nor come from a bare number
// without saying which; both compare, hash, format and key maps.
#include "gpu_ids.h"

#include <gtest/gtest.h>

#include <map>
#include <type_traits>
#include <unordered_set>

#include <fmt/format.h>

namespace gshare::arbiter {
namespace {

// What the compiler now rejects: an ordinal where an index is expected and the reverse
// (e.g. gpus_[ordinal], Reserve(c, ordinal), IssueOrder(c, t, index)), and a bare number for
// either.
static_assert(!std::is_convertible_v<DeviceOrdinal, GpuIndex>);
static_assert(!std::is_constructible_v<GpuIndex, DeviceOrdinal>);
static_assert(!std::is_convertible_v<GpuIndex, DeviceOrdinal>);
static_assert(!std::is_constructible_v<DeviceOrdinal, GpuIndex>);
static_assert(!std::is_convertible_v<uint32_t, GpuIndex>);
static_assert(!std::is_convertible_v<uint32_t, DeviceOrdinal>);
static_assert(!std::is_convertible_v<GpuIndex, uint32_t>);
static_assert(!std::is_convertible_v<DeviceOrdinal, uint32_t>);
template <typename Table, typename Key>
concept IndexableBy = requires(Table t, Key k) { t[k]; };
static_assert(IndexableBy<const ByGpu<int>&, GpuIndex>);
static_assert(!IndexableBy<const ByGpu<int>&, DeviceOrdinal>);
static_assert(!IndexableBy<const ByGpu<int>&, uint32_t>);
static_assert(sizeof(GpuIndex) == sizeof(uint32_t) && sizeof(DeviceOrdinal) == sizeof(uint32_t));

TEST(GpuIds, CompareHashFormatAndKeyMaps) {
  EXPECT_EQ(GpuIndex{1}, GpuIndex{1});
  EXPECT_LT(DeviceOrdinal{1}, DeviceOrdinal{3});
  EXPECT_EQ(DeviceOrdinal{3}.value(), 3u);
  std::map<GpuIndex, int> by_index{{GpuIndex{1}, 2}, {GpuIndex{0}, 1}};
  EXPECT_EQ(by_index.begin()->first, GpuIndex{0});
  std::unordered_set<DeviceOrdinal> ordinals{DeviceOrdinal{1}, DeviceOrdinal{3}, DeviceOrdinal{1}};
  EXPECT_EQ(ordinals.size(), 2u);
  EXPECT_EQ(fmt::format("GPU {} (index {})", DeviceOrdinal{3}, GpuIndex{1}), "GPU 3 (index 1)");
}

TEST(GpuIds, ByGpuIsIndexedByGpuIndexOnly) {
  ByGpu<int> table(std::vector<int>{10, 30});
  EXPECT_EQ(table[GpuIndex{1}], 30);
  EXPECT_TRUE(table.contains(GpuIndex{1}));
  EXPECT_FALSE(table.contains(GpuIndex{2}));
  std::vector<GpuIndex> seen;
  for (const GpuIndex g : table.indices()) seen.push_back(g);
  EXPECT_EQ(seen, (std::vector<GpuIndex>{GpuIndex{0}, GpuIndex{1}}));
  ByGpu<bool> flags(std::vector<bool>{false, true});
  EXPECT_TRUE(flags[GpuIndex{1}]);
}

}  // namespace
}  // namespace gshare::arbiter
