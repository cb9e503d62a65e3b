// Context guard and pipelined multi-stream copies used by swap-out and swap-in.
#include "swap_copier.h"

#include <algorithm>

namespace gshare::memory {

ScopedDeviceContext::ScopedDeviceContext(const DeviceApi& api, CUdevice device)
    : api_(api), device_(device) {
  CUcontext current = nullptr;
  if (api_.ctx_get_current(&current) == CUDA_SUCCESS && current != nullptr) {
    CUdevice current_device = -1;
    if (api_.ctx_get_device(&current_device) == CUDA_SUCCESS && current_device == device) return;
  }
  CUcontext primary = nullptr;
  status_ = api_.device_primary_ctx_retain(&primary, device);
  if (status_ != CUDA_SUCCESS) return;
  retained_ = true;
  status_ = api_.ctx_push_current(primary);
  pushed_ = status_ == CUDA_SUCCESS;
}

ScopedDeviceContext::~ScopedDeviceContext() {
  if (pushed_) {
    CUcontext popped = nullptr;
    (void)api_.ctx_pop_current(&popped);
  }
  if (retained_) (void)api_.device_primary_ctx_release(device_);
}

SwapCopier::~SwapCopier() {
  for (const auto& mark : marks_) {
    for (CUevent e : mark) (void)api_.event_destroy(e);
  }
  for (CUstream s : streams_) (void)api_.stream_destroy(s);
}

CUresult SwapCopier::Start(unsigned count) {
  count = std::max(count, 1u);
  for (unsigned i = 0; i < count; ++i) {
    CUstream s = nullptr;
    const CUresult rc = api_.stream_create(&s, CU_STREAM_NON_BLOCKING);
    if (rc != CUDA_SUCCESS) return rc;
    streams_.push_back(s);
  }
  return CUDA_SUCCESS;
}

CUstream SwapCopier::NextStream() {
  CUstream s = streams_[next_];
  next_ = (next_ + 1) % streams_.size();
  return s;
}

void SwapCopier::CopyOut(void* host, CUdeviceptr device, uint64_t bytes) {
  auto* dst = static_cast<uint8_t*>(host);
  for (uint64_t done = 0; done < bytes && first_error_ == CUDA_SUCCESS;) {
    const uint64_t n = std::min(piece_bytes_, bytes - done);
    first_error_ = api_.memcpy_dtoh_async(dst + done, device + done, n, NextStream());
    done += n;
  }
}

void SwapCopier::CopyIn(CUdeviceptr device, const void* host, uint64_t bytes) {
  const auto* src = static_cast<const uint8_t*>(host);
  for (uint64_t done = 0; done < bytes && first_error_ == CUDA_SUCCESS;) {
    const uint64_t n = std::min(piece_bytes_, bytes - done);
    first_error_ = api_.memcpy_htod_async(device + done, src + done, n, NextStream());
    done += n;
  }
}

size_t SwapCopier::Mark() {
  std::vector<CUevent> events;
  for (CUstream s : streams_) {
    if (first_error_ != CUDA_SUCCESS) break;
    CUevent e = nullptr;
    first_error_ = api_.event_create(&e, CU_EVENT_DISABLE_TIMING);
    if (first_error_ != CUDA_SUCCESS) break;
    events.push_back(e);
    first_error_ = api_.event_record(e, s);
  }
  marks_.push_back(std::move(events));
  return marks_.size() - 1;
}

CUresult SwapCopier::WaitMark(size_t id) {
  for (CUevent e : marks_[id]) {
    if (first_error_ != CUDA_SUCCESS) break;
    first_error_ = api_.event_synchronize(e);
  }
  return first_error_;
}

CUresult SwapCopier::Finish() {
  for (CUstream s : streams_) {
    const CUresult rc = api_.stream_synchronize(s);
    if (first_error_ == CUDA_SUCCESS) first_error_ = rc;
  }
  return first_error_;
}

}  // namespace gshare::memory
