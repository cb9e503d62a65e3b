// DeferredFrees: the stream-ordered frees (cuMemFreeAsync) whose streams have not yet passed
// the free. Each is an event recorded on the freeing stream; completion is polled with
// cuEventQuery (never waited for, except by TakeCompleted(wait = true) during swap-out, after
// the drain). Events are pooled per context and reused.
//
// Thread-safety: none; the owner (VgpuMemory) serialises calls.
#pragma once

#include <cuda.h>

#include <vector>

#include "gshare/memory/device_api.h"

namespace gshare::memory {

class DeferredFrees {
 public:
  explicit DeferredFrees(const DeviceApi& api) : api_(api) {}
  // Destroys pooled and pending events (errors ignored: their contexts may be gone).
  ~DeferredFrees();
  DeferredFrees(const DeferredFrees&) = delete;
  DeferredFrees& operator=(const DeferredFrees&) = delete;

  // Records an event on `stream` marking the free of `ptr`. REQUIRES: the stream's context is
  // current. On error nothing is pending.
  CUresult Add(CUdeviceptr ptr, CUstream stream);

  // Removes the entries whose events have completed (or, with wait, all of them after
  // synchronising each event) and returns their pointers, in the order they were added. An
  // event whose query fails with an error other than NOT_READY counts as completed.
  std::vector<CUdeviceptr> TakeCompleted(bool wait);

  [[nodiscard]] size_t pending() const { return pending_.size(); }

 private:
  struct PooledEvent {
    CUcontext context = nullptr;
    CUevent event = nullptr;
  };
  struct Pending {
    CUdeviceptr ptr = 0;
    PooledEvent event;
  };

  const DeviceApi& api_;
  std::vector<PooledEvent> pool_;
  std::vector<Pending> pending_;
};

}  // namespace gshare::memory
