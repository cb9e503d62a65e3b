// The scheduler's workload model: identifiers, simulated/real time, functions (model, memory,
// execution-time prior, SLO) and GPUs (memory, host-link bandwidth, price), plus the one cost
// model of moving a function's state over the host link that the policies and the simulator
// share, so a policy's prediction and the simulator's charge agree by construction.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace gshare::policy {

// Time in microseconds on a monotonic clock chosen by the caller (simulated time in gshare-sim,
// CLOCK_MONOTONIC in the arbiter). The policy never reads a clock itself.
using Time = int64_t;
using Duration = int64_t;  // microseconds
inline constexpr Duration kUsPerSecond = 1'000'000;
inline constexpr Time kNever = std::numeric_limits<Time>::max();

// Dense indices chosen by the caller: functions 0..N-1 in registration order is typical (a
// gone function's id may be reused: policy.h, protocol item 5), GPUs 0..G-1 as configured in
// PolicyConfig::gpus.
using FunctionId = uint32_t;
using GpuId = uint32_t;
inline constexpr FunctionId kNoFunction = std::numeric_limits<FunctionId>::max();
inline constexpr GpuId kNoGpu = std::numeric_limits<GpuId>::max();

// What the scheduler knows about a function when it registers. The execution-time figures are
// a prior (from the model catalog); policies refine them online from observed bursts.
struct FunctionSpec {
  std::string model;           // catalog name, for reports
  uint64_t weights_bytes = 0;  // read-only model state: swapped out for free (host snapshot)
  uint64_t context_bytes = 0;  // CUDA context + activations: stays on the GPU while "parked"
  Duration exec_p50 = 1000;    // solo GPU execution time of one request (prior)
  Duration exec_p90 = 1000;
  Duration slo = 10'000;  // a request is on time if it completes within slo of its arrival
};

struct GpuSpec {
  uint64_t memory_bytes = 40ull << 30;
  double link_bytes_per_us = 24'000.0;  // host<->device copy bandwidth (24 GB/s = 24,000 B/us)
  double price_per_hour = 3.06;         // USD per GPU-hour while active
  // Fixed cost of recreating a context from a host checkpoint (deep restore), on top of the
  // copy itself.
  Duration restore_overhead = 2'000;
};

// Where a function's GPU state is.
//   kHost:     nothing on any GPU (never loaded, or deep-evicted to a host checkpoint);
//   kParked:   only its context (context_bytes) is on `gpu`; weights are in host memory;
//   kResident: weights and context (weights_bytes + context_bytes) are on `gpu`; it can run.
enum class Residency : uint8_t { kHost, kParked, kResident };
const char* ResidencyName(Residency r);

// Bytes a function occupies on its GPU in each state.
uint64_t FootprintBytes(const FunctionSpec& spec, Residency r);

// The link transfer that brings a function from (`from`, on GPU `from_gpu`) to kResident on
// `to`: from kParked on the same GPU only the weights move; from kHost, or from kParked on
// another GPU (a migration: the old context is dropped), weights and context move and the
// deep-restore overhead is added. REQUIRES: from != kResident.
struct Transfer {
  uint64_t bytes = 0;
  Duration time = 0;  // on an otherwise idle link
};
Transfer SwapInCost(const FunctionSpec& spec, Residency from, GpuId from_gpu, GpuId to,
                    const GpuSpec& gpu);

// Cost of a deep eviction (checkpointing the context to the host; weights are never copied out
// because the host keeps a snapshot of them).
Transfer DeepEvictCost(const FunctionSpec& spec, Residency from, const GpuSpec& gpu);

// Cost in USD of `gpu_time` microseconds of GPU time at `price_per_hour`.
double GpuCostUsd(Duration gpu_time, double price_per_hour);

}  // namespace gshare::policy
