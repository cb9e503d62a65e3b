// Lower bounds of a workload's GPU time, whatever the policy: the busy time (every second of
// execution is a second some GPU is active) and the memory that must be held to serve every
// request on time that could be (the bytes a function keeps on a GPU while it idles between
// requests, because it cannot be swapped in again in time, plus loads and executions), spread
// over GPUs of the node's memory. gshare-sim reports each policy's distance from them.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>

#include "gshare/policy/types.h"
#include "gshare/sim/engine.h"

namespace gshare::sim {

struct WorkloadBounds {
  // Sum of the requests' execution times: no schedule has less GPU time.
  double busy_seconds = 0;
  // Byte-seconds some GPU must hold, divided by one GPU's memory (see ComputeBounds).
  double memory_seconds = 0;
  // max(busy_seconds, memory_seconds): a lower bound of every policy's GPU time.
  double lower_bound_seconds = 0;
  // Of memory_seconds, what idle functions must keep between requests (the rest are loads
  // and executions).
  double hold_seconds = 0;
  // Functions with a request that could be on time but not after a restore from the host
  // begun at its arrival (restore + execution > SLO): it must be on a GPU, resident or parked,
  // or restored ahead (the bound is clairvoyant: it may prefetch), before that request.
  uint64_t unswappable_functions = 0;
};

// The bounds of `workload` on GPUs like `gpu` (memory, link, restore overhead). Per function,
// in arrival order: the first request needs a restore from the host (its footprint held for
// the restore time); before each later one, in the gap since the previous one must have ended
// (its deadline, when it could be on time; else no gap), the function is held at the cheapest
// of: staying resident, parking (context held, weights swapped back in), or a restore from the
// host — the last two only where they still let the request start by its latest start
// (deadline − execution; any time for a request that no schedule serves on time, judged by
// the dedicated-GPU ceiling); and every execution holds the footprint. Transfers are taken at
// the link's full bandwidth, never waiting for each other (so the bound stays a bound).
WorkloadBounds ComputeBounds(const SimWorkload& workload, const policy::GpuSpec& gpu);

}  // namespace gshare::sim
