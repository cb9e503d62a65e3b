// Unit tests of the arbiter's TenantLimits (arbiter/src/tenant_limits.h): clients per uid and per
// process, the registration rate per uid, the back-off after repeated unenforceable
// disconnections, the cap on MPS terminations per uid and window, and forgetting a uid once
// nothing about it matters.
#include "tenant_limits.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

using Verdict = TenantLimits::Verdict;
constexpr uint64_t kSec = 1'000'000'000;

TEST(TenantLimits, ClientsPerUidAndPerProcessAreCapped) {
  TenantLimits limits({/*per uid*/ 3, /*per pid*/ 2, /*rate*/ 0});
  std::string why;
  EXPECT_EQ(limits.Check(1000, 10, kSec, &why), Verdict::kAllowed);
  limits.Added(1000, 10);
  EXPECT_EQ(limits.Check(1000, 10, kSec, &why), Verdict::kAllowed);
  limits.Added(1000, 10);
  EXPECT_EQ(limits.Check(1000, 10, kSec, &why), Verdict::kLimit);  // pid 10 has 2
  EXPECT_NE(why.find("max_clients_per_pid"), std::string::npos) << why;
  EXPECT_EQ(limits.Check(1000, 11, kSec, &why), Verdict::kAllowed);
  limits.Added(1000, 11);
  EXPECT_EQ(limits.Check(1000, 12, kSec, &why), Verdict::kLimit);  // uid 1000 has 3
  EXPECT_NE(why.find("max_clients_per_uid"), std::string::npos) << why;
  EXPECT_EQ(limits.Check(1001, 12, kSec, &why), Verdict::kAllowed);  // another uid is not
  limits.Removed(1000, 10, kSec);
  EXPECT_EQ(limits.clients_of_uid(1000), 2u);
  EXPECT_EQ(limits.Check(1000, 12, kSec, &why), Verdict::kAllowed);
}

TEST(TenantLimits, RegistrationRateIsATokenBucketPerUid) {
  TenantLimits limits({0, 0, /*rate*/ 5});
  std::string why;
  int allowed = 0;
  for (int i = 0; i < 20; ++i) allowed += limits.Check(7, 100 + i, kSec, &why) == Verdict::kAllowed;
  EXPECT_EQ(allowed, 10);  // bursts of twice the rate
  EXPECT_NE(why.find("registration_rate_per_uid"), std::string::npos) << why;
  EXPECT_EQ(limits.Check(8, 1, kSec, &why), Verdict::kAllowed);  // per uid
  // 200 ms later one more token (5 a second) has come back, not two.
  EXPECT_EQ(limits.Check(7, 200, kSec + kSec / 5, &why), Verdict::kAllowed);
  EXPECT_EQ(limits.Check(7, 201, kSec + kSec / 5, &why), Verdict::kLimit);
}

TEST(TenantLimits, BackOffStartsAtTheSecondUnenforceableAndDoubles) {
  TenantLimits limits({0, 0, 0});
  std::string why;
  EXPECT_EQ(limits.Unenforceable(5, kSec), 0u);  // one alone costs nothing
  EXPECT_EQ(limits.Check(5, 1, kSec, &why), Verdict::kAllowed);
  EXPECT_EQ(limits.Unenforceable(5, 2 * kSec), TenantLimits::kBackoffBaseNs);
  EXPECT_EQ(limits.Check(5, 1, 2 * kSec + 1, &why), Verdict::kBackoff);
  EXPECT_NE(why.find("back-off"), std::string::npos) << why;
  EXPECT_EQ(limits.Check(6, 1, 2 * kSec + 1, &why), Verdict::kAllowed);  // other uids are not
  EXPECT_EQ(limits.Check(5, 1, 3 * kSec, &why), Verdict::kAllowed);  // over after 1 s
  EXPECT_EQ(limits.Unenforceable(5, 4 * kSec), 2 * TenantLimits::kBackoffBaseNs);
  // A quiet period forgets the count: the next one alone costs nothing again.
  EXPECT_EQ(limits.Unenforceable(5, 4 * kSec + TenantLimits::kQuietNs + 1), 0u);
}

// mps_terminations_per_uid = 2 per 10 s window: a third within the window is refused naming the
// settings, other uids are unaffected, and the window slides (the oldest leaving frees a place).
TEST(TenantLimits, MpsTerminationsAreCappedPerUidAndWindow) {
  TenantLimits limits({0, 0, 0, 2, 10 * kSec});
  std::string why;
  EXPECT_TRUE(limits.AllowMpsTermination(1000, 1 * kSec, &why));
  EXPECT_TRUE(limits.AllowMpsTermination(1000, 2 * kSec, &why));
  EXPECT_FALSE(limits.AllowMpsTermination(1000, 3 * kSec, &why));
  EXPECT_NE(why.find("uid 1000 caused 2 MPS terminations within 10000 ms"), std::string::npos) << why;
  EXPECT_NE(why.find("mps_terminations_per_uid"), std::string::npos) << why;
  EXPECT_NE(why.find("allowed in 8001 ms"), std::string::npos) << why;
  EXPECT_TRUE(limits.AllowMpsTermination(1001, 3 * kSec, &why));  // another tenant
  EXPECT_FALSE(limits.AllowMpsTermination(1000, 11 * kSec - 1, &why));
  EXPECT_TRUE(limits.AllowMpsTermination(1000, 11 * kSec, &why));  // the first left the window
  EXPECT_FALSE(limits.AllowMpsTermination(1000, 11 * kSec, &why));
  // A uid with nothing else is still remembered while a termination is inside its window.
  limits.Added(1002, 7);
  EXPECT_TRUE(limits.AllowMpsTermination(1002, 20 * kSec, &why));
  limits.Removed(1002, 7, 21 * kSec);
  EXPECT_TRUE(limits.AllowMpsTermination(1002, 22 * kSec, &why));
  EXPECT_FALSE(limits.AllowMpsTermination(1002, 23 * kSec, &why));
  // 0: no cap.
  TenantLimits uncapped({0, 0, 0, 0, 10 * kSec});
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(uncapped.AllowMpsTermination(1000, kSec, &why));
}

TEST(TenantLimits, AUidIsForgottenOnlyWhenNothingAboutItMatters) {
  TenantLimits limits({0, 0, /*rate*/ 10});
  std::string why;
  ASSERT_EQ(limits.Check(1, 1, kSec, &why), Verdict::kAllowed);
  limits.Added(1, 1);
  EXPECT_EQ(limits.tracked_uids(), 1u);
  limits.Removed(1, 1, kSec);
  EXPECT_EQ(limits.tracked_uids(), 1u);  // its bucket is one token short: a fresh one is a gift
  EXPECT_EQ(limits.tracked_pids(), 0u);
  ASSERT_EQ(limits.Check(1, 2, 3 * kSec, &why), Verdict::kAllowed);
  limits.Added(1, 2);
  limits.Removed(1, 2, 10 * kSec);  // refilled by then
  EXPECT_EQ(limits.tracked_uids(), 0u);
  // A uid with an unenforceable disconnection is remembered (its back-off may still come).
  EXPECT_EQ(limits.Unenforceable(2, kSec), 0u);
  limits.Removed(2, 9, 100 * kSec);
  EXPECT_EQ(limits.tracked_uids(), 1u);
}

}  // namespace
}  // namespace gshare::arbiter
