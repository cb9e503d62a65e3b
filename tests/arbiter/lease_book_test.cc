// Unit tests of LeaseBook (arbiter/src/lease_book.h): offers listed by GPU, replaced, ended,
// and the two indices kept in agreement.
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

}  // namespace
}  // namespace gshare::arbiter
