// Unit tests of LeaseBook (arbiter/src/lease_book.h): offers listed by GPU, replaced, ended,
// and the two indices kept in agreement; and of ClientLease, a client's side of the lease.
#include "lease_book.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

const GpuIndex kG0{0};
const GpuIndex kG1{1};

TEST(LeaseBook, OffersAreListedByTheirGpuInIdOrder) {
  LeaseBook book;
  book.Offered(7, kG0);
  book.Offered(3, kG0);
  book.Offered(5, kG1);
  EXPECT_EQ(book.OffersOn(kG0), (std::vector<uint32_t>{3, 7}));
  EXPECT_EQ(book.OffersOn(kG1), (std::vector<uint32_t>{5}));
  EXPECT_EQ(book.OfferGpu(5), kG1);
  EXPECT_FALSE(book.OfferGpu(4).has_value());
  EXPECT_EQ(book.offers(), 3U);
  EXPECT_EQ(book.CheckInvariants(), "");
}

TEST(LeaseBook, ALaterOfferReplacesTheClientsEntry) {
  LeaseBook book;
  book.Offered(3, kG0);
  book.Offered(3, kG1);
  EXPECT_TRUE(book.OffersOn(kG0).empty());
  EXPECT_EQ(book.OffersOn(kG1), (std::vector<uint32_t>{3}));
  EXPECT_EQ(book.offers(), 1U);
  EXPECT_EQ(book.CheckInvariants(), "");
}

TEST(LeaseBook, AnEndedOfferIsGoneAndEndingTwiceIsHarmless) {
  LeaseBook book;
  book.Offered(3, kG0);
  book.Offered(4, kG0);
  book.Ended(3);
  book.Ended(3);
  book.Ended(99);  // never offered
  EXPECT_EQ(book.OffersOn(kG0), (std::vector<uint32_t>{4}));
  EXPECT_FALSE(book.OfferGpu(3).has_value());
  book.Ended(4);
  EXPECT_TRUE(book.OffersOn(kG0).empty());
  EXPECT_EQ(book.offers(), 0U);
  EXPECT_EQ(book.CheckInvariants(), "");
}

TEST(ClientLease, ATakeIsUnconfirmedUntilThePolicyGrantsIt) {
  ClientLease lease;
  EXPECT_FALSE(lease.Confirm());  // nothing taken: nothing to confirm
  lease.Taken();
  EXPECT_TRUE(lease.unconfirmed());
  EXPECT_TRUE(lease.Confirm());
  EXPECT_FALSE(lease.unconfirmed());
  EXPECT_FALSE(lease.Confirm());
}

TEST(ClientLease, ABurstEndedBeforeTheGrantIsAnsweredOnce) {
  ClientLease lease;
  lease.Taken();
  lease.EndedBeforeGrant(1234);
  EXPECT_FALSE(lease.unconfirmed());
  EXPECT_TRUE(lease.ended_before_grant());
  EXPECT_EQ(lease.TakeEnded(), 1234U);
  EXPECT_FALSE(lease.ended_before_grant());
  EXPECT_FALSE(lease.TakeEnded().has_value());
}

TEST(ClientLease, AReleaseWithinTheTakenBurstLeavesNothingToAnswer) {
  ClientLease lease;
  lease.Taken();
  lease.ReleasedInBurst();
  EXPECT_FALSE(lease.unconfirmed());
  EXPECT_FALSE(lease.ended_before_grant());
  EXPECT_FALSE(lease.malformed());
  lease.Scribbled();
  EXPECT_TRUE(lease.malformed());
}

}  // namespace
}  // namespace gshare::arbiter
