// PinnedStaging: the page-locked host buffer that holds a swapped-out vGPU's bytes. Allocated
// once (cuMemHostAlloc, portable so any context can copy through it), grown only when a larger
// image must be stored, reused by every later swap.
//
// Thread-safety: none; the owner (VgpuMemory) serialises calls.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "gshare/memory/device_api.h"

namespace gshare::memory {

class PinnedStaging {
 public:
  explicit PinnedStaging(const DeviceApi& api) : api_(api) {}
  ~PinnedStaging() { Release(); }
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Makes the buffer at least `bytes` long; when it must grow, it is re-pinned with
  // max(bytes, preferred) bytes. Growing frees the old buffer first (its contents are lost).
  // REQUIRES: a context is current. On error the buffer is empty.
  CUresult EnsureCapacity(uint64_t bytes, uint64_t preferred = 0);
  void Release();

  [[nodiscard]] uint8_t* data() const { return data_; }
  [[nodiscard]] uint64_t capacity() const { return capacity_; }

 private:
  const DeviceApi& api_;
  uint8_t* data_ = nullptr;
  uint64_t capacity_ = 0;
};

}  // namespace gshare::memory
