// One device's part of simcuda-demo: allocates, copies, loads the kernel PTX, launches
// vector_add, saxpy, sgemm and fill_u32 + checksum on two streams, times each step with events
// (simulated time on simcuda, GPU time on a real GPU), copies back and verifies the results
// against host computations.
#ifndef SIMCUDA_DEMO_DEVICE_RUN_H_
#define SIMCUDA_DEMO_DEVICE_RUN_H_

#include <cstddef>
#include <string>
#include <vector>

#include "cuda_status.h"

namespace simcuda_demo {

struct DemoOptions {
  unsigned long long vector_elems = 1ull << 22;     // vector_add / saxpy length (floats)
  unsigned gemm_size = 384;                         // sgemm M = N = K
  unsigned long long checksum_bytes = 32ull << 20;  // fill_u32 + checksum buffer
};

// One timed step.
struct OpResult {
  std::string op;         // e.g. "vector_add"
  std::string size;       // human-readable problem size
  float event_ms = 0;     // elapsed between events around the step
  double bytes = 0;       // bytes moved (for GB/s)
  double flops = 0;       // floating-point work (for GFLOP/s); 0 for memory-bound steps
  bool verified = false;  // result matched the host computation
  std::string detail;     // what went wrong when !verified
};

struct DeviceReport {
  int ordinal = 0;
  std::string name;
  size_t total_bytes = 0;
  size_t free_bytes = 0;  // after the demo's allocations
  double host_ms = 0;     // wall time of the whole device run
  std::vector<OpResult> ops;
};

// Runs every step on device `ordinal`. REQUIRES: cuInit succeeded. Returns the first driver
// error (empty on success); wrong results are reported per step in report->ops, not as errors.
Error RunOnDevice(int ordinal, const DemoOptions& options, DeviceReport* report);

}  // namespace simcuda_demo

#endif  // SIMCUDA_DEMO_DEVICE_RUN_H_
