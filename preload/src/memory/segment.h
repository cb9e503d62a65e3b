// Segment: one reserved VA range divided into equal pieces, each backed (while resident) by its
// own physical handle created on a device, mapped, and made read/write for that device.
// A dedicated chunk is a segment of one piece; a shared arena is a segment whose pieces are
// granules. The VA reservation lives as long as the Segment; pieces come and go.
//
// Invariants: piece(i).handle != 0 exactly while [piece_address(i), +piece_size) is mapped;
// the destructor unmaps and releases every present piece, then frees the VA range.
//
// Thread-safety: none; the owner (VgpuMemory) serialises calls.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gshare/memory/device_api.h"

namespace gshare::memory {

struct PieceState {
  CUmemGenericAllocationHandle handle = 0;  // nonzero while physically present and mapped
  uint32_t users = 0;          // live allocations overlapping the piece (0: needs no memory)
  bool has_host_copy = false;  // the staging holds its bytes at host_offset (swapped out)
  bool kept = false;           // users == 0 but still mapped: kept for reuse (KeptMemory)
  uint64_t host_offset = 0;
};

class Segment {
 public:
  // Reserves `size` bytes of VA aligned to `alignment`. REQUIRES: size is a positive multiple of
  // piece_size, which is a multiple of the driver's granularity.
  static CUresult Reserve(const DeviceApi& api, uint64_t size, uint64_t piece_size,
                          uint64_t alignment, std::unique_ptr<Segment>* out);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  [[nodiscard]] CUdeviceptr base() const { return base_; }
  [[nodiscard]] uint64_t size() const { return size_; }
  [[nodiscard]] uint64_t piece_size() const { return piece_size_; }
  [[nodiscard]] size_t piece_count() const { return pieces_.size(); }
  [[nodiscard]] CUdeviceptr piece_address(size_t i) const { return base_ + i * piece_size_; }
  [[nodiscard]] PieceState& piece(size_t i) { return pieces_[i]; }
  [[nodiscard]] const PieceState& piece(size_t i) const { return pieces_[i]; }
  // Pieces overlapped by [offset, offset + bytes) relative to base(): [first, last].
  [[nodiscard]] size_t FirstPiece(uint64_t offset) const { return offset / piece_size_; }
  [[nodiscard]] size_t LastPiece(uint64_t offset, uint64_t bytes) const {
    return (offset + bytes - 1) / piece_size_;
  }
  [[nodiscard]] bool Contains(CUdeviceptr ptr) const { return ptr >= base_ && ptr - base_ < size_; }
  // Number of pieces that currently have a handle.
  [[nodiscard]] size_t present_pieces() const { return present_; }

  // Creates a handle on `device`, maps it at piece i and grants `device` read/write access. On
  // failure nothing stays created or mapped. REQUIRES: piece(i).handle == 0.
  CUresult Back(size_t i, CUdevice device);
  // Back in two steps, for callers that map pieces from several threads: CreateAndMap does the
  // driver work and changes no state (thread-safe for distinct i); Adopt records the handle.
  CUresult CreateAndMap(size_t i, CUdevice device, CUmemGenericAllocationHandle* handle) const;
  void Adopt(size_t i, CUmemGenericAllocationHandle handle);
  // Unmaps and releases piece i. REQUIRES: piece(i).handle != 0. Returns the first error but
  // always forgets the handle.
  CUresult Unback(size_t i);

 private:
  Segment(const DeviceApi& api, CUdeviceptr base, uint64_t size, uint64_t piece_size);

  const DeviceApi& api_;
  CUdeviceptr base_;
  uint64_t size_;
  uint64_t piece_size_;
  std::vector<PieceState> pieces_;
  size_t present_ = 0;
};

// The allocation properties the manager uses for device memory on `device`.
CUmemAllocationProp DevicePinnedProp(CUdevice device);

}  // namespace gshare::memory
