// Pinned host staging for swap images: allocate once, grow rarely, reuse; the allocating
// context is a primary context this object keeps retained (see pinned_staging.h).
#include "pinned_staging.h"

#include <algorithm>
#include <utility>

namespace gshare::memory {

CUresult PinnedStaging::EnsureCapacity(uint64_t bytes, uint64_t preferred, CUdevice home) {
  if (bytes <= capacity_) return CUDA_SUCCESS;
  Release();
  bytes = std::max(bytes, preferred);
  CUcontext primary = nullptr;
  CUresult rc = api_.device_primary_ctx_retain(&primary, home);
  if (rc != CUDA_SUCCESS) return rc;
  home_ = home;
  home_retained_ = true;
  rc = api_.ctx_push_current(primary);
  if (rc != CUDA_SUCCESS) {
    Release();
    return rc;
  }
  void* p = nullptr;
  rc = api_.mem_host_alloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
  CUcontext popped = nullptr;
  (void)api_.ctx_pop_current(&popped);
  if (rc != CUDA_SUCCESS) {
    Release();
    return rc;
  }
  data_ = static_cast<uint8_t*>(p);
  capacity_ = bytes;
  return CUDA_SUCCESS;
}

void PinnedStaging::Release() {
  if (data_ != nullptr) (void)api_.mem_free_host(data_);
  data_ = nullptr;
  capacity_ = 0;
  if (home_retained_) (void)api_.device_primary_ctx_release(home_);
  home_retained_ = false;
}

void PinnedStaging::Swap(PinnedStaging& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(capacity_, other.capacity_);
  std::swap(home_, other.home_);
  std::swap(home_retained_, other.home_retained_);
}

}  // namespace gshare::memory
