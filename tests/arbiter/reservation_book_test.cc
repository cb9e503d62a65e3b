// Unit tests of the arbiter's ReservationBook (arbiter/src/reservation_book.h): per-GPU reserved
// bytes as the sums of their holders (clients' quotas, orphans' bytes), hand-over of a client's
// reservation to an orphan, overshoot counted only for an orphan's new bytes, and the book's own
// invariant check.
#include "reservation_book.h"

#include <gtest/gtest.h>

namespace gshare::arbiter {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

TEST(ReservationBook, ClientReservationsAreTheGpusSums) {
  ReservationBook book({1024 * kMiB, 512 * kMiB});
  EXPECT_TRUE(book.Fits(GpuIndex{0}, 1024 * kMiB));
  EXPECT_TRUE(book.ReserveClient(1, GpuIndex{0}, 256 * kMiB));
  EXPECT_TRUE(book.ReserveClient(2, GpuIndex{0}, 512 * kMiB));
  EXPECT_TRUE(book.ReserveClient(3, GpuIndex{1}, 128 * kMiB));
  EXPECT_EQ(book.reserved(GpuIndex{0}), 768 * kMiB);
  EXPECT_EQ(book.reserved(GpuIndex{1}), 128 * kMiB);
  EXPECT_EQ(book.unreserved(GpuIndex{0}), 256 * kMiB);
  EXPECT_TRUE(book.Fits(GpuIndex{0}, 256 * kMiB));
  EXPECT_FALSE(book.Fits(GpuIndex{0}, 256 * kMiB + 1));
  EXPECT_EQ(book.ClientGpu(2), GpuIndex{0});
  EXPECT_EQ(book.ClientBytes(3), 128 * kMiB);
  EXPECT_EQ(book.ClientsOn(GpuIndex{0}), (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(book.ReleaseClient(1));
  EXPECT_EQ(book.reserved(GpuIndex{0}), 512 * kMiB);
  EXPECT_EQ(book.peak_reserved(GpuIndex{0}), 768 * kMiB);
  EXPECT_EQ(book.ClientGpu(1), std::nullopt);
  EXPECT_EQ(book.CheckInvariants(), "");
}

TEST(ReservationBook, AClientHoldsOneReservationAndReleasesItOnce) {
  ReservationBook book({1024 * kMiB, 1024 * kMiB});
  EXPECT_TRUE(book.ReserveClient(7, GpuIndex{0}, 100 * kMiB));
  // A second reservation (even on another GPU) is refused: it would count the quota twice.
  EXPECT_FALSE(book.ReserveClient(7, GpuIndex{1}, 100 * kMiB));
  EXPECT_EQ(book.reserved(GpuIndex{1}), 0u);
  EXPECT_TRUE(book.ReleaseClient(7));
  EXPECT_FALSE(book.ReleaseClient(7));  // a second release takes nothing from the GPU
  EXPECT_EQ(book.reserved(GpuIndex{0}), 0u);
  EXPECT_FALSE(book.ReserveClient(8, GpuIndex{2}, kMiB));  // no such GPU
  EXPECT_EQ(book.CheckInvariants(), "");
}

TEST(ReservationBook, HandingAReservationToAnOrphanKeepsTheBytesReserved) {
  ReservationBook book({1024 * kMiB});
  ASSERT_TRUE(book.ReserveClient(4, GpuIndex{0}, 300 * kMiB));
  EXPECT_TRUE(book.HandToOrphan(4, 1));
  EXPECT_EQ(book.reserved(GpuIndex{0}), 300 * kMiB);
  EXPECT_EQ(book.orphaned(GpuIndex{0}), 300 * kMiB);
  EXPECT_EQ(book.ClientGpu(4), std::nullopt);
  EXPECT_EQ(book.OrphanGpu(1), GpuIndex{0});
  EXPECT_EQ(book.OrphanBytes(1), 300 * kMiB);
  EXPECT_FALSE(book.ReleaseClient(4));  // the client's reservation is the orphan's now
  EXPECT_FALSE(book.HandToOrphan(5, 2));  // nothing to hand over
  EXPECT_EQ(book.CheckInvariants(), "");
  EXPECT_TRUE(book.ReleaseOrphan(1));
  EXPECT_EQ(book.reserved(GpuIndex{0}), 0u);
  EXPECT_EQ(book.orphaned(GpuIndex{0}), 0u);
  EXPECT_FALSE(book.ReleaseOrphan(1));
  EXPECT_EQ(book.CheckInvariants(), "");
}

TEST(ReservationBook, AnOrphansNewBytesMayOvershootAndAreCounted) {
  ReservationBook book({512 * kMiB});
  ASSERT_TRUE(book.ReserveClient(1, GpuIndex{0}, 400 * kMiB));
  // A process thawed while leaving holds its 200 MiB again, whether or not they fit.
  book.AddOrphan(3, GpuIndex{0}, 200 * kMiB);
  EXPECT_EQ(book.reserved(GpuIndex{0}), 600 * kMiB);
  EXPECT_EQ(book.overshoot_events(GpuIndex{0}), 1u);
  EXPECT_EQ(book.unreserved(GpuIndex{0}), 0u);
  EXPECT_FALSE(book.Fits(GpuIndex{0}, 1));
  EXPECT_EQ(book.CheckInvariants(), "");  // overshot, but counted
  ASSERT_TRUE(book.ReleaseOrphan(3));
  EXPECT_EQ(book.unreserved(GpuIndex{0}), 112 * kMiB);
  EXPECT_EQ(book.peak_reserved(GpuIndex{0}), 600 * kMiB);
  book.AddOrphan(4, GpuIndex{0}, 100 * kMiB);  // fits: no overshoot
  EXPECT_EQ(book.overshoot_events(GpuIndex{0}), 1u);
  EXPECT_EQ(book.CheckInvariants(), "");
}

}  // namespace
}  // namespace gshare::arbiter
