// Events: record a point in a stream's simulated timeline. The state shared with queued
// operations lives in EventCore (outlives the handle). Thread-safe.
#ifndef SIMCUDA_SRC_EVENT_H_
#define SIMCUDA_SRC_EVENT_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "api.h"

namespace simcuda {

struct EventCore {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;   // generation of the latest cuEventRecord
  uint64_t completed = 0;  // generation of the latest completed record
  uint64_t time_ns = 0;    // simulated time of the completed record
};

inline constexpr uint32_t kEventMagic = 0x45564e31;  // "EVN1"

}  // namespace simcuda

struct CUevent_st {
  uint32_t magic;
  unsigned flags;
  std::shared_ptr<simcuda::EventCore> core;
};

#endif  // SIMCUDA_SRC_EVENT_H_
