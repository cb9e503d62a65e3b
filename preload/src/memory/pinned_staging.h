// PinnedStaging: the page-locked host buffer that holds a swapped-out vGPU's bytes. Allocated
// once (cuMemHostAlloc, portable so any context can copy through it), grown only when a larger
// image must be stored, reused by every later swap.
//
// Lifetime of the pinned memory: the driver frees page-locked memory together with the context
// that allocated it (real CUDA does; simcuda too). So the buffer is always allocated in the
// primary context of a "home" device on which this object holds its own retain for as long as
// the buffer exists: neither the application destroying its contexts nor the swap engine
// releasing a primary context it pushed only for one swap can free the image under a later
// swap-in.
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
  // max(bytes, preferred) bytes in the primary context of `home` (retained until Release).
  // Growing frees the old buffer first (its contents are lost). Works with any context current
  // (or none); the caller's current context is unchanged. On error the buffer is empty.
  CUresult EnsureCapacity(uint64_t bytes, uint64_t preferred, CUdevice home);
  // Frees the buffer and drops the retain on its home device's primary context.
  void Release();
  // Exchanges buffers (and their home retains) with `other` (same DeviceApi).
  void Swap(PinnedStaging& other) noexcept;

  [[nodiscard]] uint8_t* data() const { return data_; }
  [[nodiscard]] uint64_t capacity() const { return capacity_; }

 private:
  const DeviceApi& api_;
  uint8_t* data_ = nullptr;
  uint64_t capacity_ = 0;
  CUdevice home_ = 0;
  bool home_retained_ = false;
};

}  // namespace gshare::memory
