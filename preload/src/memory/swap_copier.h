// Swap-time helpers: a context guard that makes some context of the target device current, and
// SwapCopier, which splits host<->device copies into pieces issued round-robin on several
// streams so copies overlap each other and the mapping work of the caller.
//
// Thread-safety: none; used inside VgpuMemory's swap under its lock, on one thread.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "gshare/memory/device_api.h"

namespace gshare::memory {

// Makes a context of `device` current for its lifetime: the current one when it belongs to
// `device`, otherwise the device's primary context (retained and pushed; popped and released at
// destruction). Check status() before use.
class ScopedDeviceContext {
 public:
  ScopedDeviceContext(const DeviceApi& api, CUdevice device);
  ~ScopedDeviceContext();
  ScopedDeviceContext(const ScopedDeviceContext&) = delete;
  ScopedDeviceContext& operator=(const ScopedDeviceContext&) = delete;
  [[nodiscard]] CUresult status() const { return status_; }

 private:
  const DeviceApi& api_;
  CUdevice device_;
  bool pushed_ = false;
  bool retained_ = false;
  CUresult status_ = CUDA_SUCCESS;
};

class SwapCopier {
 public:
  SwapCopier(const DeviceApi& api, uint64_t piece_bytes) : api_(api), piece_bytes_(piece_bytes) {}
  // Destroys the streams (after Finish, nothing is in flight).
  ~SwapCopier();
  SwapCopier(const SwapCopier&) = delete;
  SwapCopier& operator=(const SwapCopier&) = delete;

  // Creates `count` (>= 1) non-blocking streams in the current context.
  CUresult Start(unsigned count);
  // Enqueue copies of `bytes`, split into pieces. Errors are remembered and returned by Finish.
  void CopyOut(void* host, CUdeviceptr device, uint64_t bytes);
  void CopyIn(CUdeviceptr device, const void* host, uint64_t bytes);
  // Records a mark after everything enqueued so far (an event on every stream) and returns its
  // number (0, 1, ...). Errors are remembered.
  size_t Mark();
  // Waits until everything enqueued before mark `id` has completed; returns the first error.
  CUresult WaitMark(size_t id);
  // Waits for every stream; returns the first error seen since Start.
  CUresult Finish();

 private:
  CUstream NextStream();

  const DeviceApi& api_;
  uint64_t piece_bytes_;
  std::vector<CUstream> streams_;
  std::vector<std::vector<CUevent>> marks_;  // per mark, one event per stream
  size_t next_ = 0;
  CUresult first_error_ = CUDA_SUCCESS;
};

}  // namespace gshare::memory
