// Unit tests of DeadlineQueue (arbiter/src/deadline_queue.h): entries come out when due,
// earliest first, ties in client order; nothing comes out early; the next wake-up is the
// earliest entry's time; stale entries are the caller's to skip (a client's later entry stays).
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

}  // namespace
}  // namespace gshare::arbiter
