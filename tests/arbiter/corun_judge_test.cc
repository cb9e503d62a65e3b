// The co-run burst's verdict and the solo reference (arbiter/src/corun_judge.h): a burst counts
// against co-running only when its latency passes the threat and it held the GPU longer than
// the function's solo bursts by more than 5% of its SLO, unless it is too long for co-running to
// explain (other work); a function runs a burst alone before it co-runs, and again every 16
// co-run bursts or after other work (the join rules keep it out of sets meanwhile).
#include "corun_judge.h"

#include <gtest/gtest.h>

#include "corun.h"

namespace gshare::arbiter {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(CorunJudge, OnlyTheTimeCoRunningAddedCountsAgainstTheSet) {
  // SLO 100 ms, threat 80%, a set of 2: 80 ms is within the threat whatever the reference.
  EXPECT_EQ(JudgeCorunBurst(80 * kMs, 80 * kMs, 30 * kMs, 100, 80, 2), CorunVerdict::kFine);
  // 81 ms over a 30 ms solo burst: co-running added 51 ms, more than 5 ms.
  EXPECT_EQ(JudgeCorunBurst(81 * kMs, 81 * kMs, 30 * kMs, 100, 80, 2), CorunVerdict::kThreatened);
  // The same latency from a burst that takes 78 ms alone: 3 ms added, its own work.
  EXPECT_EQ(JudgeCorunBurst(81 * kMs, 81 * kMs, 78 * kMs, 100, 80, 2), CorunVerdict::kFine);
  // Exactly 5% added is not more than 5%.
  EXPECT_EQ(JudgeCorunBurst(90 * kMs, 85 * kMs, 80 * kMs, 100, 80, 2), CorunVerdict::kFine);
  EXPECT_EQ(JudgeCorunBurst(90 * kMs, 86 * kMs, 80 * kMs, 100, 80, 2), CorunVerdict::kThreatened);
  // A burst shorter than its reference (waits made the latency) added nothing.
  EXPECT_EQ(JudgeCorunBurst(95 * kMs, 5 * kMs, 10 * kMs, 100, 80, 2), CorunVerdict::kFine);
  // With no solo burst: not judged.
  EXPECT_EQ(JudgeCorunBurst(1876 * kMs, 1800 * kMs, std::nullopt, 300, 90, 2),
            CorunVerdict::kNoReference);
  // A fast burst needs no reference.
  EXPECT_EQ(JudgeCorunBurst(10 * kMs, 10 * kMs, std::nullopt, 300, 90, 2), CorunVerdict::kFine);
}

// Beside n members (itself included) a burst slowed more than 2n times is other work than its
// reference: the demo's bert-1 loaded its weights (1,726 ms) after a 96 ms first burst, in a set
// of 3; judged as co-running's doing, it revoked GPU 0 before any server was ready.
TEST(CorunJudge, ABurstTooLongForCoRunningToExplainIsOtherWork) {
  EXPECT_EQ(JudgeCorunBurst(3573 * kMs, 1726 * kMs, 96 * kMs, 150, 90, 3), CorunVerdict::kUnlike);
  // 6x in a set of 3 is what co-running may do: judged.
  EXPECT_EQ(JudgeCorunBurst(600 * kMs, 576 * kMs, 96 * kMs, 150, 90, 3),
            CorunVerdict::kThreatened);
  EXPECT_EQ(JudgeCorunBurst(600 * kMs, 578 * kMs, 96 * kMs, 150, 90, 3), CorunVerdict::kUnlike);
  // The bound grows with the set.
  EXPECT_EQ(JudgeCorunBurst(600 * kMs, 578 * kMs, 96 * kMs, 150, 90, 4),
            CorunVerdict::kThreatened);
  SoloReference r;
  r.AddSolo(96 * kMs);
  EXPECT_FALSE(r.needs_solo());
  r.Refresh();
  EXPECT_TRUE(r.needs_solo()) << "its next burst runs alone, for a fresh reference";
  r.AddSolo(1700 * kMs);
  EXPECT_FALSE(r.needs_solo());
}

TEST(CorunJudge, TheReferenceIsTheLowerQuartileOfTheNewestSoloBursts) {
  SoloReference r;
  EXPECT_EQ(r.Typical(), std::nullopt);
  EXPECT_TRUE(r.needs_solo()) << "no solo burst yet";
  r.AddSolo(1876 * kMs);  // a load
  EXPECT_EQ(r.Typical(), 1876 * kMs);
  EXPECT_FALSE(r.needs_solo());
  r.AddSolo(40 * kMs);
  EXPECT_EQ(r.Typical(), 40 * kMs) << "the loads, a server's longest bursts, do not set it";
  for (uint64_t ms : {50, 60, 70, 80, 90}) r.AddSolo(ms * kMs);
  EXPECT_EQ(r.Typical(), 50 * kMs);  // of 1876, 40, 50 ... 90: sorted index (7-1)/4 = 1
  // Only the newest kKept count: the 1876 and the 40 drop out.
  for (uint64_t ms : {100, 110, 120}) r.AddSolo(ms * kMs);
  EXPECT_EQ(r.count(), SoloReference::kKept);
  EXPECT_EQ(r.Typical(), 60 * kMs);  // of 50 ... 120
}

TEST(CorunJudge, AFunctionRunsAloneAgainEverySixteenCoRunBursts) {
  SoloReference r;
  r.AddSolo(10 * kMs);
  for (uint32_t i = 1; i < SoloReference::kSoloRefreshBursts; ++i) r.AddCorun();
  EXPECT_FALSE(r.needs_solo());
  r.AddCorun();
  EXPECT_TRUE(r.needs_solo()) << "its reference is refreshed";
  r.AddSolo(12 * kMs);
  EXPECT_FALSE(r.needs_solo());
}

TEST(CorunJudge, AMemberThatNeedsASoloBurstNeitherJoinsNorIsJoined) {
  CorunConfig config;
  config.gpus = {0};
  CorunBook book(config, {DeviceOrdinal{0}});
  CorunMember a{1, 1000, 100, "a", 50, false}, b{2, 1000, 100, "b", 50, false};
  EXPECT_EQ(book.JoinRefusal(GpuIndex{0}, b, {a}, 0), "");
  b.needs_solo = true;
  EXPECT_NE(book.JoinRefusal(GpuIndex{0}, b, {a}, 0).find("alone first"), std::string::npos);
  EXPECT_NE(book.JoinRefusal(GpuIndex{0}, a, {b}, 0).find("holder 2 runs a burst alone"),
            std::string::npos);
}

}  // namespace
}  // namespace gshare::arbiter
