// DoorbellGuard (arbiter/src/doorbell_guard.h): the per-client token bucket against doorbell
// flooding, on a synthetic clock: within the rate every wake-up is served; beyond it the
// doorbell is muted for the time half the bucket takes to refill; a client that keeps flooding
// for disconnect_after is to be disconnected, one that pauses for a second starts a new episode.
#include "doorbell_guard.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

using Verdict = DoorbellGuard::Verdict;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;
constexpr uint64_t kT0 = 100 * kS;

// Wakes the guard `n` times `gap_ns` apart from `*now` (advanced), unmuting it when a mute is
// over; returns how many wake-ups were served and stops at a disconnect verdict.
struct Counts {
  int served = 0;
  int muted = 0;
  bool disconnected = false;
};
Counts Drive(DoorbellGuard& g, uint64_t* now, int n, uint64_t gap_ns) {
  Counts c;
  for (int i = 0; i < n && !c.disconnected; ++i, *now += gap_ns) {
    if (g.muted()) {
      if (*now < g.unmute_ns()) continue;  // not watched: the wake-up does not happen
      g.Unmute();
    }
    switch (g.OnWake(1000, *now)) {
      case Verdict::kServe: ++c.served; break;
      case Verdict::kMute: ++c.muted; break;
      case Verdict::kDisconnect: c.disconnected = true; break;
    }
  }
  return c;
}

TEST(DoorbellGuard, UnlimitedServesEverything) {
  DoorbellGuard g({0, 1 * kS}, kT0);
  uint64_t now = kT0;
  const Counts c = Drive(g, &now, 100000, 1000);  // a million wake-ups a second
  EXPECT_EQ(c.served, 100000);
  EXPECT_EQ(g.mutes(), 0u);
  EXPECT_EQ(g.rings(), 100000u * 1000u);
}

TEST(DoorbellGuard, WithinTheRateEveryWakeUpIsServed) {
  DoorbellGuard g({1000, 1 * kS}, kT0);
  EXPECT_EQ(g.burst(), 100u);
  EXPECT_EQ(g.mute_ns(), 50 * kMs);
  uint64_t now = kT0;
  const Counts c = Drive(g, &now, 5000, 2 * kMs);  // 500 a second for 10 s
  EXPECT_EQ(c.served, 5000);
  EXPECT_EQ(c.muted, 0);
  // A burst of a tenth of a second's worth at once is fine too.
  const Counts burst = Drive(g, &now, 100, 0);
  EXPECT_EQ(burst.served, 100);
}

TEST(DoorbellGuard, FloodIsMutedToTheRate) {
  DoorbellGuard g({1000, 0}, kT0);
  uint64_t now = kT0;
  const Counts c = Drive(g, &now, 2'000'000, 1000);  // attempts every microsecond for 2 s
  // Served: the initial burst plus what the rate refills over 2 s, never more.
  EXPECT_LE(c.served, 100 + 2000 + 1);
  EXPECT_GE(c.served, 2000 - 100);
  EXPECT_GT(c.muted, 10);
  EXPECT_FALSE(c.disconnected);  // disconnect_after 0: never
  EXPECT_EQ(g.mutes(), static_cast<uint64_t>(c.muted));
}

TEST(DoorbellGuard, MuteLastsUntilHalfTheBucketRefilled) {
  DoorbellGuard g({1000, 0}, kT0);
  uint64_t now = kT0;
  for (int i = 0; i < 100; ++i) ASSERT_EQ(g.OnWake(1, now), Verdict::kServe);
  EXPECT_EQ(g.OnWake(1, now), Verdict::kMute);
  EXPECT_TRUE(g.muted());
  EXPECT_TRUE(g.episode_began());
  EXPECT_EQ(g.unmute_ns(), now + 50 * kMs);
  g.Unmute();
  now += 50 * kMs;
  int served = 0;
  while (g.OnWake(1, now) == Verdict::kServe) ++served;
  EXPECT_EQ(served, 50);
  EXPECT_FALSE(g.episode_began()) << "a mute soon after the last is the same episode";
}

TEST(DoorbellGuard, SustainedFloodIsDisconnectedAfterTheBound) {
  DoorbellGuard g({1000, 3 * kS}, kT0);
  uint64_t now = kT0;
  const Counts c = Drive(g, &now, 10'000'000, 1000);  // up to 10 s of flooding
  EXPECT_TRUE(c.disconnected);
  EXPECT_GE(g.episode_start_ns(), kT0);  // the first mute, once the initial burst was spent
  EXPECT_LT(g.episode_start_ns(), kT0 + kMs);
  EXPECT_GE(now - kT0, 3 * kS);
  EXPECT_LT(now - kT0, 3 * kS + 100 * kMs);
}

TEST(DoorbellGuard, PausesStartNewEpisodesAndAreNotDisconnected) {
  DoorbellGuard g({1000, 3 * kS}, kT0);
  uint64_t now = kT0;
  // Floods for 1 s, pauses 2 s, five times: 5 s of flooding in all, never 3 s in one episode.
  int episodes = 0;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 1'000'000; ++i, now += 1000) {
      if (g.muted()) {
        if (now < g.unmute_ns()) continue;
        g.Unmute();
      }
      const Verdict v = g.OnWake(1, now);
      ASSERT_NE(v, Verdict::kDisconnect) << "round " << round;
      episodes += v == Verdict::kMute && g.episode_began();
    }
    now += 2 * kS;
  }
  EXPECT_EQ(episodes, 5);
}

}  // namespace
}  // namespace gshare::arbiter
