// A deterministic, PyTorch-like device allocation trace for the fragmentation test and
// benchmark (docs/vgpu-memory.md describes it):
//   1. model load: parameter and buffer tensors of many sizes (log-normal around 256 KiB, from
//      4 bytes to 256 MiB: biases, norms, conv and linear weights, embeddings), kept alive;
//   2. inference: iterations with varying batch sizes (1, 2, 4, 8, 3, 16, ...) each allocating
//      a chain of activations (log-normal around 1 MiB x batch, 256 B .. 96 MiB) freed two to
//      four layers later, per-layer temporaries freed at once, and a cuBLAS-like workspace;
//      everything of an iteration is freed at its end, in allocation order.
// The same seed always gives the same trace.
#pragma once

#include <cstdint>
#include <vector>

#include "gshare/memory/vgpu_memory.h"

namespace gshare::memory::testing {

struct TraceOp {
  bool allocate = true;  // false: free
  uint32_t id = 0;       // names the allocation; a free refers to an earlier allocate's id
  uint64_t bytes = 0;    // allocate only
};

// REQUIRES: iterations >= 1.
std::vector<TraceOp> MakePytorchLikeTrace(uint64_t seed, int iterations);

// Waste of a replay: physical memory held (backed) against the bytes the trace has live
// (requested), sampled after every operation.
struct TraceWaste {
  uint64_t operations = 0;
  uint64_t peak_requested = 0;     // largest live requested bytes
  uint64_t backed_at_peak = 0;     // backed bytes at that moment
  uint64_t max_backed = 0;
  // max over operations of backed - 1.10 * requested, in bytes (may be negative).
  double max_excess_over_110 = -1e300;
  uint64_t physical_handles_at_peak = 0;
};

// Replays `ops` on `mem` (allocations filled with nothing) and frees whatever is left at the
// end. Returns the first error an operation returned, CUDA_SUCCESS otherwise.
CUresult ReplayForWaste(VgpuMemory& mem, const std::vector<TraceOp>& ops, TraceWaste* waste);

}  // namespace gshare::memory::testing
