// Unit tests of ChooseRoom (arbiter/src/room_choice.h): the idle vGPUs swapped out to make room
// for a swap-in, cheapest first and only as many as needed, and none when all of them together
// could not make the room.
#include "room_choice.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kNow = 100'000'000'000ULL;  // 100 s
constexpr uint64_t kSecond = 1'000'000'000ULL;

TEST(ChooseRoom, NothingIsEvictedWhenTheRoomIsThereOrOnItsWay) {
  EXPECT_TRUE(ChooseRoom({{1, 200 * kMiB, 0}}, 500 * kMiB, 500 * kMiB, kNow).empty());
}

TEST(ChooseRoom, TheCheapestPerIdleSecondGoFirstAndOnlyAsManyAsNeeded) {
  // 3: small and idle long (cheapest); 1: large, idle long; 2: small, used just now.
  const std::vector<RoomCandidate> candidates = {
      {1, 400 * kMiB, kNow - 50 * kSecond},
      {2, 100 * kMiB, kNow},
      {3, 100 * kMiB, kNow - 50 * kSecond},
  };
  EXPECT_EQ(ChooseRoom(candidates, 0, 100 * kMiB, kNow), std::vector<uint32_t>{3});
  EXPECT_EQ(ChooseRoom(candidates, 0, 300 * kMiB, kNow), (std::vector<uint32_t>{3, 1}));
  EXPECT_EQ(ChooseRoom(candidates, 50 * kMiB, 600 * kMiB, kNow), (std::vector<uint32_t>{3, 1, 2}));
}

TEST(ChooseRoom, NoneIsEvictedWhenAllOfThemCouldNotMakeTheRoom) {
  // A 600 MiB swap-in beside pinned memory: 224 MiB free, one 200 MiB idle vGPU. Swapping it out
  // would leave 424 MiB: the swap-in would still wait, and the idle function would pay two copies.
  const std::vector<RoomCandidate> candidates = {{1, 200 * kMiB, kNow - 10 * kSecond}};
  EXPECT_TRUE(ChooseRoom(candidates, 224 * kMiB, 600 * kMiB, kNow).empty());
  // Once memory is freed otherwise, the same candidate suffices and is chosen.
  EXPECT_EQ(ChooseRoom(candidates, 400 * kMiB, 600 * kMiB, kNow), std::vector<uint32_t>{1});
}

}  // namespace
}  // namespace gshare::arbiter
