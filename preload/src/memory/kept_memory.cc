// KeptMemory: freed physical memory kept mapped for the next allocation (see kept_memory.h).
#include "kept_memory.h"

namespace gshare::memory {

bool KeptMemory::KeepPiece(Segment* seg, size_t i, uint64_t room) {
  const uint64_t size = seg->piece_size();
  if (bytes_ + size > limit_ || bytes_ + size > room) return false;
  seg->piece(i).kept = true;
  pieces_.push_back({seg, i});
  bytes_ += size;
  ++kept_pieces_;
  if (pieces_.size() > 2 * kept_pieces_ + 64) {
    // Mostly stale entries (pieces reused since): drop them, keeping the order. A piece kept
    // again after a reuse may appear twice; the first entry that still finds it kept counts.
    std::deque<PieceRef> live;
    for (const PieceRef& p : pieces_)
      if (p.segment->piece(p.index).kept) live.push_back(p);
    pieces_.swap(live);
  }
  return true;
}

void KeptMemory::ReusePiece(Segment* seg, size_t i) {
  seg->piece(i).kept = false;  // its entry in pieces_ goes stale; skipped when trimming
  bytes_ -= seg->piece_size();
  --kept_pieces_;
  ++reuses_;
}

bool KeptMemory::KeepChunk(std::unique_ptr<Segment>& chunk, uint64_t room) {
  const uint64_t size = chunk->size();
  if (bytes_ + size > limit_ || bytes_ + size > room) return false;
  bytes_ += size;
  chunks_.emplace(size, std::move(chunk));
  return true;
}

std::unique_ptr<Segment> KeptMemory::TakeChunk(uint64_t size) {
  auto it = chunks_.find(size);
  if (it == chunks_.end()) return nullptr;
  std::unique_ptr<Segment> chunk = std::move(it->second);
  chunks_.erase(it);
  bytes_ -= size;
  ++reuses_;
  return chunk;
}

CUresult KeptMemory::TrimTo(uint64_t target) {
  CUresult first_error = CUDA_SUCCESS;
  while (bytes_ > target && !chunks_.empty()) {
    auto it = std::prev(chunks_.end());  // the largest first: fewest releases
    bytes_ -= it->first;
    chunks_.erase(it);  // unmaps, releases, frees its VA
  }
  while (bytes_ > target && !pieces_.empty()) {
    const PieceRef p = pieces_.front();
    pieces_.pop_front();
    PieceState& piece = p.segment->piece(p.index);
    if (!piece.kept) continue;  // reused since
    piece.kept = false;
    bytes_ -= p.segment->piece_size();
    --kept_pieces_;
    const CUresult rc = p.segment->Unback(p.index);
    if (first_error == CUDA_SUCCESS) first_error = rc;
  }
  if (bytes_ == 0) pieces_.clear();  // only stale entries can be left
  return first_error;
}

}  // namespace gshare::memory
