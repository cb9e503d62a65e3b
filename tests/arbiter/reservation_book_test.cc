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

// An MPS client's context is held beside its quota, whether or not its vGPU is resident: it
// stays when the quota is released (a swap-out), goes with the client to its orphan (whichever
// of the two it has), and may overshoot like an orphan's bytes (the process holds it already).
TEST(ReservationBook, AContextIsHeldBesideTheQuotaAndGoesToTheOrphan) {
  ReservationBook book({1024 * kMiB});
  const GpuIndex g{0};
  ASSERT_TRUE(book.ReserveClient(1, g, 300 * kMiB));
  ASSERT_TRUE(book.ReserveContext(1, g, 100 * kMiB));
  EXPECT_FALSE(book.ReserveContext(1, g, 100 * kMiB));  // one context per client
  EXPECT_EQ(book.reserved(g), 400 * kMiB);
  EXPECT_EQ(book.contexts(g), 100 * kMiB);
  EXPECT_EQ(book.ContextBytes(1), 100 * kMiB);
  EXPECT_TRUE(book.ReleaseClient(1));  // swapped out: the context stays
  EXPECT_EQ(book.reserved(g), 100 * kMiB);
  EXPECT_FALSE(book.Fits(g, 925 * kMiB));
  EXPECT_EQ(book.CheckInvariants(), "");
  // Disconnected alive while swapped out: its orphan holds the context alone.
  EXPECT_TRUE(book.HandToOrphan(1, 7));
  EXPECT_EQ(book.OrphanBytes(7), 100 * kMiB);
  EXPECT_EQ(book.orphaned(g), 100 * kMiB);
  EXPECT_EQ(book.contexts(g), 0u);
  EXPECT_EQ(book.ContextBytes(1), 0u);
  EXPECT_FALSE(book.ReleaseContext(1));  // it is the orphan's now
  EXPECT_EQ(book.CheckInvariants(), "");
  // Resident and disconnected: quota and context, one orphan.
  ASSERT_TRUE(book.ReserveClient(2, g, 200 * kMiB));
  ASSERT_TRUE(book.ReserveContext(2, g, 50 * kMiB));
  EXPECT_TRUE(book.HandToOrphan(2, 8));
  EXPECT_EQ(book.OrphanBytes(8), 250 * kMiB);
  EXPECT_EQ(book.reserved(g), 350 * kMiB);
  EXPECT_EQ(book.CheckInvariants(), "");
  ASSERT_TRUE(book.ReleaseOrphan(7));
  ASSERT_TRUE(book.ReleaseOrphan(8));
  EXPECT_EQ(book.reserved(g), 0u);
  // Never refused: past usable, an overshoot is counted.
  ASSERT_TRUE(book.ReserveClient(3, g, 1000 * kMiB));
  EXPECT_TRUE(book.ReserveContext(3, g, 100 * kMiB));
  EXPECT_EQ(book.overshoot_events(g), 1u);
  EXPECT_EQ(book.CheckInvariants(), "");
  EXPECT_TRUE(book.ReleaseContext(3));
  EXPECT_EQ(book.reserved(g), 1000 * kMiB);
  EXPECT_EQ(book.contexts(g), 0u);
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
