// RangeAllocator: best-fit allocation of aligned sub-ranges of [0, capacity), with coalescing of
// freed neighbours. Pure bookkeeping (no driver, no memory); the shared arenas use one each.
//
// Invariants (checked by CheckInvariants, exercised by range_allocator_test):
//   1. free ranges are disjoint, non-empty, and never adjacent (adjacent ones are merged);
//   2. by_offset_ and by_size_ hold exactly the same ranges;
//   3. free_bytes_ is the sum of free range sizes; allocated bytes = capacity - free_bytes_.
//
// Thread-safety: none; the owner serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace gshare::memory {

class RangeAllocator {
 public:
  explicit RangeAllocator(uint64_t capacity);

  // Returns the offset of a free sub-range of `size` bytes starting at a multiple of
  // `alignment`, taken from the smallest free range that can hold it (lowest offset on ties);
  // nullopt when none can. REQUIRES: size > 0, alignment a power of two.
  std::optional<uint64_t> Allocate(uint64_t size, uint64_t alignment);

  // Returns [offset, offset + size) to the free set, merging with free neighbours.
  // REQUIRES: the range was returned by Allocate (or is a part of one never freed).
  void Free(uint64_t offset, uint64_t size);

  [[nodiscard]] uint64_t capacity() const { return capacity_; }
  [[nodiscard]] uint64_t free_bytes() const { return free_bytes_; }
  [[nodiscard]] uint64_t largest_free() const;
  [[nodiscard]] size_t free_ranges() const { return by_offset_.size(); }
  [[nodiscard]] bool empty() const { return free_bytes_ == capacity_; }
  // True when the invariants above hold (O(n); for tests).
  [[nodiscard]] bool CheckInvariants() const;

 private:
  void Insert(uint64_t offset, uint64_t size);
  void Erase(std::map<uint64_t, uint64_t>::iterator it);

  uint64_t capacity_;
  uint64_t free_bytes_ = 0;
  std::map<uint64_t, uint64_t> by_offset_;            // offset -> size
  std::set<std::pair<uint64_t, uint64_t>> by_size_;   // (size, offset)
};

}  // namespace gshare::memory
