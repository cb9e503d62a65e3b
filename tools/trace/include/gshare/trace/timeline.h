// The timeline: event-ring records turned into intervals (token holds and waits, swaps,
// bursts), instants and counter samples, per client and per GPU. Pure and deterministic; the
// Chrome/Perfetto JSON writer (chrome_json.h) renders it.
//
// Burst analysis (docs/tracing.md): a burst runs from the client's burst start to its burst
// end (client clock = CLOCK_MONOTONIC, same as the ring's). Inside that window its latency is
// split into exec (GPU time the client reported, else the time it held the token), swap (time
// a swap-in of this client was in flight) and queue (the rest: waiting for the token). A burst
// misses its SLO when latency > SLO; the cause is "execution" when exec alone exceeds the SLO,
// else the larger of "swap" and "queueing".
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "gshare/shm/event_ring.h"

namespace gshare::trace {

inline constexpr uint32_t kNoGpu = 0xFFFFFFFFu;

struct ClientInfo {
  uint32_t id = 0;
  std::string name;  // "client <id>" when the ring no longer holds its registration
  int64_t pid = -1;  // -1: unknown
  int64_t uid = -1;
  uint64_t quota = 0;
  uint32_t slo_ms = 0;  // at registration (later changes apply to later bursts)
  uint32_t gpu = kNoGpu;
};

enum class SliceKind { kHold, kWait, kSwapIn, kSwapOut, kBurst };
const char* SliceKindName(SliceKind kind);  // "hold", "wait", "swap-in", "swap-out", "burst"

struct Slice {
  SliceKind kind = SliceKind::kHold;
  uint32_t client = 0;
  uint32_t gpu = kNoGpu;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  bool unfinished = false;  // still open when the capture ended (end_ns = capture end)
  // hold: grant seq; swaps: order seq.
  uint64_t seq = 0;
  // swaps: bytes moved (begin: bytes ordered), client-reported duration, resident after.
  uint64_t bytes = 0;
  uint64_t duration_ns = 0;
  uint64_t resident_after = 0;
  // bursts: see the file comment.
  uint32_t slo_ms = 0;
  uint64_t gpu_time_ns = 0;
  uint64_t exec_ns = 0;
  uint64_t swap_ns = 0;
  uint64_t queue_ns = 0;
  bool miss = false;
  std::string cause;  // "", "queueing", "swap", "execution"
};

struct Instant {
  std::string name;  // "preempt", "revoke", "checkpoint", "restore", "register", "unregister"
  uint32_t client = 0;
  uint32_t gpu = kNoGpu;
  uint64_t ts_ns = 0;
  uint64_t arg = 0;  // preempt/revoke: grant seq; unregister: reason
};

enum class CounterKind { kGpuReserved, kGpuResident, kClientReserved, kClientResident };

struct CounterSample {
  CounterKind kind = CounterKind::kGpuReserved;
  uint32_t id = 0;  // GPU ordinal or client id
  uint32_t gpu = kNoGpu;  // client samples: the GPU the memory is on
  uint64_t ts_ns = 0;
  uint64_t bytes = 0;
};

struct Timeline {
  std::map<uint32_t, ClientInfo> clients;
  std::vector<uint32_t> gpus;  // ordinals seen, ascending
  std::vector<Slice> slices;   // per (client, kind-track) non-overlapping
  std::vector<Instant> instants;
  std::vector<CounterSample> counters;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint64_t records = 0;
  uint64_t lost = 0;
};

// Builds the timeline of `events` (oldest first) within [begin_ns, end_ns]. `context` holds
// earlier identity records (register, name, SLO, reservation) applied first. `lost` is
// reported as is. Robust to missing records (lost ones): unmatched ends are dropped or
// reconstructed from their durations, never produce overlapping slices on one track.
Timeline BuildTimeline(std::span<const shm::Event> context, std::span<const shm::Event> events,
                       uint64_t begin_ns, uint64_t end_ns, uint64_t lost);

}  // namespace gshare::trace
