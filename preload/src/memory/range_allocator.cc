// Best-fit range allocator with coalescing; see range_allocator.h for the invariants.
#include "range_allocator.h"

#include <iterator>

namespace gshare::memory {

RangeAllocator::RangeAllocator(uint64_t capacity) : capacity_(capacity) {
  if (capacity > 0) Insert(0, capacity);
}

void RangeAllocator::Insert(uint64_t offset, uint64_t size) {
  by_offset_.emplace(offset, size);
  by_size_.emplace(size, offset);
  free_bytes_ += size;
}

void RangeAllocator::Erase(std::map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  free_bytes_ -= it->second;
  by_offset_.erase(it);
}

std::optional<uint64_t> RangeAllocator::Allocate(uint64_t size, uint64_t alignment) {
  if (size == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return std::nullopt;
  for (auto cand = by_size_.lower_bound({size, 0}); cand != by_size_.end(); ++cand) {
    const uint64_t start = cand->second;
    const uint64_t length = cand->first;
    const uint64_t aligned = (start + alignment - 1) & ~(alignment - 1);
    if (aligned - start + size > length) continue;
    Erase(by_offset_.find(start));
    if (aligned > start) Insert(start, aligned - start);
    const uint64_t tail = start + length - (aligned + size);
    if (tail > 0) Insert(aligned + size, tail);
    return aligned;
  }
  return std::nullopt;
}

void RangeAllocator::Free(uint64_t offset, uint64_t size) {
  if (size == 0) return;
  uint64_t start = offset;
  uint64_t end = offset + size;
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      Erase(prev);
    }
  }
  next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && next->first == end) {
    end = next->first + next->second;
    Erase(next);
  }
  Insert(start, end - start);
}

uint64_t RangeAllocator::largest_free() const {
  return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

bool RangeAllocator::CheckInvariants() const {
  if (by_offset_.size() != by_size_.size()) return false;
  uint64_t sum = 0;
  uint64_t prev_end = 0;
  bool first = true;
  for (const auto& [offset, size] : by_offset_) {
    if (size == 0 || offset + size > capacity_) return false;
    if (!first && offset <= prev_end) return false;  // overlapping or adjacent
    if (by_size_.count({size, offset}) != 1) return false;
    prev_end = offset + size;
    first = false;
    sum += size;
  }
  return sum == free_bytes_;
}

}  // namespace gshare::memory
