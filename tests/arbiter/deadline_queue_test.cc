// Unit tests of DeadlineQueue (arbiter/src/deadline_queue.h): entries come out when due,
// earliest first, ties in client order; nothing comes out early; the next wake-up is the
// earliest entry's time; stale entries are the caller's to skip (a client's later entry stays); a
// client's marks keep one live entry per kind, keep an earlier one, and never repeat a served one.
#include "deadline_queue.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

using Kind = DeadlineQueue::Kind;

TEST(DeadlineQueue, EntriesComeOutWhenDueEarliestFirst) {
  DeadlineQueue q;
  EXPECT_EQ(q.NextNs(), UINT64_MAX);
  EXPECT_TRUE(q.PopDue(UINT64_MAX - 1).empty());
  q.Schedule(300, 7, Kind::kDoorbellUnmute);
  q.Schedule(100, 9, Kind::kDoorbellUnmute);
  q.Schedule(200, 3, Kind::kDoorbellUnmute);
  q.Schedule(100, 2, Kind::kDoorbellUnmute);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.NextNs(), 100u);
  EXPECT_TRUE(q.PopDue(99).empty());  // nothing early
  const auto first = q.PopDue(200);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].client_id, 2u);  // ties: by client id
  EXPECT_EQ(first[1].client_id, 9u);
  EXPECT_EQ(first[2].client_id, 3u);
  EXPECT_EQ(first[2].at_ns, 200u);
  EXPECT_EQ(q.NextNs(), 300u);
  EXPECT_EQ(q.size(), 1u);
  const auto rest = q.PopDue(1000);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].client_id, 7u);
  EXPECT_EQ(q.NextNs(), UINT64_MAX);
}

TEST(DeadlineQueue, AClientsRescheduledDeadlineKeepsBothEntriesForTheCallerToJudge) {
  DeadlineQueue q;
  q.Schedule(100, 5, Kind::kDoorbellUnmute);  // then unmuted by hand and muted again until 400
  q.Schedule(400, 5, Kind::kDoorbellUnmute);
  EXPECT_EQ(q.PopDue(100).size(), 1u);  // the stale one: the caller sees the client is not due
  EXPECT_EQ(q.NextNs(), 400u);          // the later one is not lost
  EXPECT_EQ(q.PopDue(400).size(), 1u);
}

TEST(DeadlineQueue, AClientHasOneLiveEntryPerKindAndAnEarlierOneIsKept) {
  DeadlineQueue q;
  DeadlineQueue::ClientMarks m;
  q.Want(m, 4, Kind::kDeepEvict, 500);
  q.Want(m, 4, Kind::kDeepEvict, 500);  // the same deadline: no second entry
  q.Want(m, 4, Kind::kDeepEvict, 900);  // later (the vGPU was used again): the earlier one stays
  EXPECT_EQ(q.size(), 1u);
  q.Want(m, 4, Kind::kSliceEnd, 700);  // another kind: its own entry
  q.Want(m, 4, Kind::kDeepEvict, UINT64_MAX);  // none: nothing
  EXPECT_EQ(q.size(), 2u);
  q.Want(m, 4, Kind::kDeepEvict, 300);  // earlier: a new live entry; the one at 500 is stale
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.NextNs(), 300u);
  auto due = q.PopDue(500);
  ASSERT_EQ(due.size(), 2u);
  EXPECT_TRUE(DeadlineQueue::Claim(m, due[0]));   // 300: live
  EXPECT_FALSE(DeadlineQueue::Claim(m, due[1]));  // 500: stale
  // Claimed: no live entry of that kind until it is wanted again.
  q.Want(m, 4, Kind::kDeepEvict, 900);
  EXPECT_EQ(q.NextNs(), 700u);
  due = q.PopDue(900);
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[1].at_ns, 900u);
  EXPECT_TRUE(DeadlineQueue::Claim(m, due[0]));
  EXPECT_TRUE(DeadlineQueue::Claim(m, due[1]));
}

TEST(DeadlineQueue, AServedDeadlineIsNotScheduledAgain) {
  // A wake-up only deadline that passed (a slice that ended with nobody waiting) stays what the
  // client's state says until its state changes: scheduling it again would wake the loop at
  // once, forever.
  DeadlineQueue q;
  DeadlineQueue::ClientMarks m;
  q.Want(m, 1, Kind::kSliceEnd, 100);
  const auto due = q.PopDue(100);
  ASSERT_EQ(due.size(), 1u);
  ASSERT_TRUE(DeadlineQueue::Claim(m, due[0]));
  DeadlineQueue::Served(m, Kind::kSliceEnd, 100);
  q.Want(m, 1, Kind::kSliceEnd, 100);
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.NextNs(), UINT64_MAX);
  q.Want(m, 1, Kind::kSliceEnd, 250);  // the next grant's slice
  EXPECT_EQ(q.NextNs(), 250u);
}

}  // namespace
}  // namespace gshare::arbiter
