// KeptMemory: physical memory VgpuMemory keeps mapped after the application freed it, so that
// the next allocation landing there costs no driver call. Per-request buffers (allocate, run,
// free, allocate again) otherwise pay a create + map + set-access and an unmap + release per
// pair (docs/vgpu-memory.md, "Kept memory"). Two kinds:
//   - arena pieces (granules) whose last user left: they stay mapped at their address; the
//     best-fit range allocator hands the same range out again, which finds them present;
//   - whole dedicated chunks, by size: an allocation of the same rounded size gets the chunk
//     (its address and memory) back.
// Bounded: at most `limit` bytes, and never more than the owner's room (quota minus what live
// allocations use), so used + kept never exceeds the quota. The owner trims it before it needs
// physical memory for a live allocation (oldest first, chunks before pieces) and drops all of
// it before a swap-out. Kept memory is not "used": GetInfo and the quota see it as free.
//
// Ownership: owns the kept chunks (destroying one unmaps and releases it); kept arena pieces
// stay owned by their arena Segment (which must outlive this object's references to them:
// the owner drops or forgets them before destroying arenas). Thread-safety: none (the owner's
// lock).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>

#include "segment.h"

namespace gshare::memory {

class KeptMemory {
 public:
  explicit KeptMemory(uint64_t limit_bytes) : limit_(limit_bytes) {}
  KeptMemory(const KeptMemory&) = delete;
  KeptMemory& operator=(const KeptMemory&) = delete;

  [[nodiscard]] uint64_t bytes() const { return bytes_; }
  [[nodiscard]] uint64_t limit() const { return limit_; }
  [[nodiscard]] size_t chunks() const { return chunks_.size(); }
  // Pieces and chunks handed back to allocations.
  [[nodiscard]] uint64_t reuses() const { return reuses_; }

  // Keeps arena piece i of `seg` mapped (its users dropped to 0; it has a handle) if the limit
  // and `room` allow. False: the caller unbacks it as usual.
  bool KeepPiece(Segment* seg, size_t i, uint64_t room);
  // The piece gets a user again: it leaves the kept set, its memory becomes live as it is.
  // REQUIRES: seg->piece(i).kept.
  void ReusePiece(Segment* seg, size_t i);

  // Keeps a freed dedicated chunk (takes it) if the limit and `room` allow; else leaves `chunk`
  // untouched and returns false (the caller destroys it).
  bool KeepChunk(std::unique_ptr<Segment>& chunk, uint64_t room);
  // A kept chunk of exactly `size` bytes (its memory mapped, contents stale), or null.
  std::unique_ptr<Segment> TakeChunk(uint64_t size);

  // Releases kept memory (chunks first, then the oldest pieces) until bytes() <= target.
  // Returns the first driver error (everything is released regardless).
  CUresult TrimTo(uint64_t target);

 private:
  struct PieceRef {
    Segment* segment;
    size_t index;
  };
  uint64_t limit_;
  uint64_t bytes_ = 0;
  uint64_t reuses_ = 0;
  size_t kept_pieces_ = 0;
  std::deque<PieceRef> pieces_;  // oldest first; may hold stale entries (reused pieces)
  std::multimap<uint64_t, std::unique_ptr<Segment>> chunks_;  // by size
};

}  // namespace gshare::memory
