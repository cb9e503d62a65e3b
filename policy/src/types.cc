// The shared transfer-cost model and small helpers of types.h.
#include "gshare/policy/types.h"

#include <cmath>

namespace gshare::policy {

const char* ResidencyName(Residency r) {
  switch (r) {
    case Residency::kHost: return "host";
    case Residency::kParked: return "parked";
    case Residency::kResident: return "resident";
  }
  return "?";
}

uint64_t FootprintBytes(const FunctionSpec& spec, Residency r) {
  switch (r) {
    case Residency::kHost: return 0;
    case Residency::kParked: return spec.context_bytes;
    case Residency::kResident: return spec.context_bytes + spec.weights_bytes;
  }
  return 0;
}

namespace {
Duration CopyTime(uint64_t bytes, const GpuSpec& gpu) {
  return static_cast<Duration>(std::ceil(static_cast<double>(bytes) / gpu.link_bytes_per_us));
}
}  // namespace

Transfer SwapInCost(const FunctionSpec& spec, Residency from, GpuId from_gpu, GpuId to,
                    const GpuSpec& gpu) {
  Transfer t;
  if (from == Residency::kParked && from_gpu == to) {
    t.bytes = spec.weights_bytes;
    t.time = CopyTime(t.bytes, gpu);
  } else {
    t.bytes = spec.weights_bytes + spec.context_bytes;
    t.time = CopyTime(t.bytes, gpu) + gpu.restore_overhead;
  }
  return t;
}

Transfer DeepEvictCost(const FunctionSpec& spec, Residency from, const GpuSpec& gpu) {
  Transfer t;
  if (from == Residency::kHost) return t;
  t.bytes = spec.context_bytes;
  t.time = CopyTime(t.bytes, gpu);
  return t;
}

double GpuCostUsd(Duration gpu_time, double price_per_hour) {
  return static_cast<double>(gpu_time) / (3600.0 * kUsPerSecond) * price_per_hour;
}

}  // namespace gshare::policy
