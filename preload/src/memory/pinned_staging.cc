// Pinned host staging for swap images: allocate once, grow rarely, reuse.
#include "pinned_staging.h"

#include <algorithm>

namespace gshare::memory {

CUresult PinnedStaging::EnsureCapacity(uint64_t bytes, uint64_t preferred) {
  if (bytes <= capacity_) return CUDA_SUCCESS;
  Release();
  bytes = std::max(bytes, preferred);
  void* p = nullptr;
  const CUresult rc = api_.mem_host_alloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
  if (rc != CUDA_SUCCESS) return rc;
  data_ = static_cast<uint8_t*>(p);
  capacity_ = bytes;
  return CUDA_SUCCESS;
}

void PinnedStaging::Release() {
  if (data_ != nullptr) (void)api_.mem_free_host(data_);
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace gshare::memory
