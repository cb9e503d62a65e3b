// Stream-ordered frees: events recorded at the free, polled for completion, pooled per context.
#include "deferred_frees.h"

#include <algorithm>

namespace gshare::memory {

DeferredFrees::~DeferredFrees() {
  for (const PooledEvent& e : pool_) (void)api_.event_destroy(e.event);
  for (const Pending& p : pending_) (void)api_.event_destroy(p.event.event);
}

CUresult DeferredFrees::Add(CUdeviceptr ptr, CUstream stream) {
  CUcontext context = nullptr;
  CUresult rc = api_.ctx_get_current(&context);
  if (rc != CUDA_SUCCESS) return rc;
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  PooledEvent event;
  auto it = std::find_if(pool_.begin(), pool_.end(),
                         [context](const PooledEvent& e) { return e.context == context; });
  if (it != pool_.end()) {
    event = *it;
    pool_.erase(it);
  } else {
    event.context = context;
    rc = api_.event_create(&event.event, CU_EVENT_DISABLE_TIMING);
    if (rc != CUDA_SUCCESS) return rc;
  }
  rc = api_.event_record(event.event, stream);
  if (rc != CUDA_SUCCESS) {
    pool_.push_back(event);
    return rc;
  }
  pending_.push_back(Pending{ptr, event});
  return CUDA_SUCCESS;
}

std::vector<CUdeviceptr> DeferredFrees::TakeCompleted(bool wait) {
  std::vector<CUdeviceptr> done;
  std::vector<Pending> still;
  for (const Pending& p : pending_) {
    const CUresult rc = wait ? api_.event_synchronize(p.event.event)
                             : api_.event_query(p.event.event);
    if (rc == CUDA_ERROR_NOT_READY) {
      still.push_back(p);
      continue;
    }
    done.push_back(p.ptr);
    pool_.push_back(p.event);
  }
  pending_.swap(still);
  return done;
}

}  // namespace gshare::memory
