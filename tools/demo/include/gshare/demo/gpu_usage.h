// GPU accounting of a demo run from the arbiter's event ring: how long each GPU held at least
// one resident vGPU ("occupied", what a provider bills), how long a function held its token
// ("busy"), and the swaps with their bytes. Definitions in docs/demo.md.
//
// Residency is rebuilt from the records: a registration makes the client resident on the GPU
// the arbiter assigned (also when it actually started swapped out, which the record does not
// say: occupancy is never under-counted), a completed swap-out or a checkpoint takes it off, a
// swap-in (from its begin, when the memory is reserved) or a restore puts it on, and an
// unregistration removes it.
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gshare/shm/event_ring.h"
#include "gshare/shm/wire.h"
#include "gshare/workload/result.h"

namespace gshare::demo {

struct GpuUsage {
  struct Gpu {
    uint32_t ordinal = 0;
    double occupied_s = 0;  // time within the window with >= 1 resident vGPU
    double busy_s = 0;      // time within the window some function held this GPU's token
    uint32_t peak_resident = 0;
  };
  std::vector<Gpu> gpus;     // every GPU that appears in the records, by ordinal
  double window_s = 0;
  double occupied_gpu_seconds = 0;  // sum of occupied_s
  double busy_gpu_seconds = 0;      // sum of busy_s
  uint32_t peak_gpus = 0;           // most GPUs occupied at once within the window
  uint32_t functions = 0;           // distinct clients registered by the window's end
  uint64_t swap_outs = 0, swap_ins = 0;  // completed within the window
  uint64_t swap_out_bytes = 0, swap_in_bytes = 0;
  double swap_out_s = 0, swap_in_s = 0;  // the clients' reported copy durations
  uint64_t grants = 0, preemptions = 0;
};

// Accounts `events` (in ring order) over [window_begin_ns, window_end_ns) on CLOCK_MONOTONIC.
// Records before the window set the state at its start. REQUIRES: window_end_ns >= begin.
// corun: the GPUs may have several token holders at once (co-run grants): busy while any
// holds it (a grant adds a holder, its yield, revocation or unregistration removes it); else the
// last grant's client is the holder (the time-only accounting).
GpuUsage AccountGpuUsage(std::span<const shm::Event> events, uint64_t window_begin_ns,
                         uint64_t window_end_ns,
                         bool corun = false);

// Every record of the ring file at `path`, oldest first; fails if the ring lost any (it was too
// small for the run) or cannot be opened.
workload::Result<std::vector<shm::Event>> ReadEventRing(const std::string& path);

}  // namespace gshare::demo
