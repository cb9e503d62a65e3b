// Unit tests of DriverJobs (arbiter/src/driver_jobs.h): each job id names one purpose until its
// completion takes it; a client's job is told from another client's; the registrations waiting
// for the driver are listed and, at shutdown, taken.
#include "driver_jobs.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

Arrival ArrivalNamed(const char* name) {
  Arrival a;
  a.request.function_name = name;
  return a;
}

TEST(DriverJobs, AJobNamesItsPurposeUntilItsCompletionTakesIt) {
  DriverJobs jobs;
  const uint64_t client = jobs.Add(ClientJob{7});
  const uint64_t orphan = jobs.Add(OrphanQuery{3});
  EXPECT_NE(client, orphan);
  EXPECT_EQ(jobs.size(), 2U);
  EXPECT_TRUE(jobs.IsClientJob(client, 7));
  EXPECT_FALSE(jobs.IsClientJob(client, 8));  // another client's
  EXPECT_FALSE(jobs.IsClientJob(orphan, 3));  // not a client's job at all
  std::optional<JobPurpose> taken = jobs.Take(orphan);
  ASSERT_TRUE(taken.has_value());
  ASSERT_TRUE(std::holds_alternative<OrphanQuery>(*taken));
  EXPECT_EQ(std::get<OrphanQuery>(*taken).orphan_id, 3U);
  EXPECT_FALSE(jobs.Take(orphan).has_value());  // a completion comes once
  EXPECT_FALSE(jobs.Take(999).has_value());
  ASSERT_TRUE(jobs.Take(client).has_value());
  EXPECT_FALSE(jobs.IsClientJob(client, 7));
  EXPECT_EQ(jobs.size(), 0U);
  EXPECT_GT(jobs.Add(ClientJob{7}), orphan);  // ids are never reused
}

TEST(DriverJobs, WaitingRegistrationsAreListedAndTakenAtShutdown) {
  DriverJobs jobs;
  jobs.Add(RegistrationJob{ArrivalNamed("a")});
  const uint64_t thaw = jobs.Add(LeavingThaw{});
  const uint64_t b = jobs.Add(RegistrationJob{ArrivalNamed("b")});
  std::vector<const Arrival*> waiting = jobs.Registrations();
  ASSERT_EQ(waiting.size(), 2U);
  EXPECT_EQ(waiting[0]->request.function_name, "a");
  EXPECT_EQ(waiting[1]->request.function_name, "b");
  std::optional<JobPurpose> done = jobs.Take(b);
  ASSERT_TRUE(done && std::holds_alternative<RegistrationJob>(*done));
  EXPECT_EQ(std::get<RegistrationJob>(*done).arrival.request.function_name, "b");
  std::vector<Arrival> left = jobs.TakeRegistrations();
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left[0].request.function_name, "a");
  EXPECT_TRUE(jobs.Registrations().empty());
  EXPECT_EQ(jobs.size(), 1U);  // the thaw is still in flight
  EXPECT_TRUE(jobs.Take(thaw).has_value());
}

}  // namespace
}  // namespace gshare::arbiter
