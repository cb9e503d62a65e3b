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
  // Co-running (spatial sharing under MPS; only on GPUs with GpuSpec::corun, see
  // interference.h for the contention model that uses these). The defaults mean "fills the
  // GPU": such a function gains nothing from co-running, so it is never co-run.
  double compute_demand = 1.0;    // d: fraction of the GPU its kernels could use alone, (0, 1]
  double bandwidth_demand = 1.0;  // b: fraction of the device's memory bandwidth used alone, [0, 1]
  // Fault domain: functions co-run only with functions of the same domain (by default the
  // tenant's uid), unless PolicyConfig::corun_across_domains. MPS reports one client's fatal
  // fault to every client on the GPU.
  uint32_t fault_domain = 0;
  // Its GPU state may not leave the GPU it is on: no swap-out, no deep eviction, no move to
  // another GPU (a policy never picks it as a victim, for room or a proxy swap, and never
  // places it elsewhere; where that would have been needed it picks other victims or waits).
  // Its first placement is free, unless FunctionRegistered::state_on names where its state
  // already is: then only there. The arbiter sets it for MPS clients (docs/arbiter.md,
  // "Co-running": their contexts live in one GPU's MPS server, and the same-address swap and
  // checkpoint are unverified under MPS).
  bool pinned = false;
  // With `pinned`: it may still be swapped out where it is (parked: its weights to the host,
  // its context stays) and swapped back in onto the same GPU, as a victim of memory pressure
  // there; deep eviction and moves to another GPU stay excluded. The arbiter sets it for MPS
  // clients when the operator says the same-address swap works under MPS on this node
  // (`mps_swaps_verified`, checked by tests/gpu/mps-check.sh). Without `pinned`: no meaning.
  bool pinned_parkable = false;
};

struct GpuSpec {
  uint64_t memory_bytes = 40ull << 30;
  double link_bytes_per_us = 24'000.0;  // host<->device copy bandwidth (24 GB/s = 24,000 B/us)
  double price_per_hour = 3.06;         // USD per GPU-hour while active
  // Fixed cost of recreating a context from a host checkpoint (deep restore), on top of the
  // copy itself.
  Duration restore_overhead = 2'000;
  // The operator marked this GPU for co-running (a private MPS daemon): the policy may grant it
  // to a set of functions at once (policy.h, Grant::corun). false: time slicing only, exactly
  // as before.
  bool corun = false;
  // Most MPS client contexts on the GPU (48 on Volta and later, NVIDIA's MPS guide).
  uint32_t max_clients = 48;
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
