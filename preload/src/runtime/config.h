// The shim's configuration, read from the environment once per process (and again in a forked
// child). Parsing is pure: it never logs, exits or touches the driver; the caller decides what a
// malformed value means (the shim logs it and fails cuInit with CUDA_ERROR_INVALID_VALUE).
// Errors are a gshare::Status (Config::error), never a CUresult: that is the caller's choice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gshare/common/status.h"

namespace gshare::preload {

struct Config {
  // GSHARE_VGPU_MEMORY: the vGPU's memory quota; unset means "the whole device".
  std::optional<uint64_t> vgpu_memory_bytes;
  std::string function_name;        // GSHARE_FUNCTION (informational until the arbiter issue)
  std::optional<uint32_t> slo_ms;   // GSHARE_SLO_MS
  std::string control_socket;       // GSHARE_CONTROL_SOCKET, "%p" replaced by the pid; "" = off
  bool control_socket_per_pid = false;  // the variable contained "%p" (a forked child may serve)
  std::string real_libcuda;         // GSHARE_REAL_LIBCUDA, "" = the loader's libcuda.so.1
  std::string log_level;            // GSHARE_LOG_LEVEL ("" = off unless GSHARE_LOG_FILE is set)
  std::string log_file;             // GSHARE_LOG_FILE ("" = stderr when a level is given)
  std::string arbiter_socket;       // GSHARE_ARBITER_SOCKET ("" = stand-alone, no arbiter)
  uint32_t idle_release_us = 300;   // GSHARE_IDLE_RELEASE_US (token released after this idle)
  bool arbiter_fail_closed = false; // GSHARE_ARBITER_FAIL=closed (default open)
  // GSHARE_REGISTER_RETRY: a first registration that finds no arbiter is retried in the
  // background, stand-alone meanwhile, with back-off from 50 ms doubling up to this (a
  // duration; default 5 s; 0 = never retried, stand-alone for good as before).
  uint64_t register_retry_max_ns = 5'000'000'000;
  // GSHARE_SHARE_QUERY: the longest the shim's cuInit waits for the arbiter's answer to its
  // share query, asked before the real cuInit when the environment sets no MPS share
  // (docs/arbiter.md, "Co-running"; a duration, default 200 ms, at most 5 s; 0 or off = never
  // ask).
  uint64_t share_query_ns = 200'000'000;
  // GSHARE_POD_NAME / GSHARE_POD_NAMESPACE: the Kubernetes pod, sent to the arbiter for
  // attribution (downward API). A malformed value is dropped ("" here) with a warning.
  std::string pod_name;
  std::string pod_namespace;
  // GSHARE_CORUN_DEMAND ("compute=20,bandwidth=10"): the percentages of the GPU's SMs and memory
  // bandwidth the function's kernels use alone, as the tenant declares them, for the arbiter's
  // co-running (docs/arbiter.md, "Co-running"); 0: unknown (never co-run).
  uint8_t compute_demand_pct = 0;
  uint8_t bandwidth_demand_pct = 0;
  // GSHARE_PREPIN: pin the swap-out staging while idle, ahead of a swap-out (1, default) or only
  // when a swap-out needs it (0: no pinned host memory until the first swap-out, which then
  // pins on its critical path).
  bool prepin = true;
  // GSHARE_LEASE: take the sole-tenant lease the arbiter offers (1, default: a request after an
  // idle gap holds the token with one CAS, no round trip) or always ask (0).
  bool lease = true;
  // GSHARE_KEEP_FREED: freed device memory kept mapped for the next allocation, at most this
  // much (a size; 0 releases at once). Alloc/free pairs then cost no driver call.
  uint64_t keep_freed_bytes = uint64_t{256} << 20;
  // GSHARE_DEVICE: the physical device (driver ordinal) the vGPU lives on when stand-alone
  // (default 0). The application sees exactly one device, this one; with an arbiter the GPU it
  // assigns at registration replaces it (docs/multi-gpu.md).
  int device = 0;
  // ok() when every variable parsed; otherwise kInvalidArgument, its message one clause per
  // malformed variable, naming it ("; " between them).
  Status error;
  // Values dropped without failing anything (the pod's name and namespace: labels only), one
  // message per variable, naming it; logged as a warning.
  std::string warnings;
};

// Reads the variables through `getenv_fn` (getenv in the shim, a map in unit tests).
// Thread-safety: pure function of its input.
Config ParseConfig(const char* (*getenv_fn)(const char* name, void* ctx), void* ctx, int pid);

// ParseConfig over the process environment.
Config ConfigFromEnvironment();

}  // namespace gshare::preload
