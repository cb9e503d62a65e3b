// Memory layout of the node's event ring: fixed-size trace records written by the arbiter
// (the single producer) and read by tracing tools (gshare-trace) through a read-only mapping.
// Specified in docs/protocol.md ("The event ring").
//
// INVARIANTS
//  1. One writer: the arbiter's event-loop thread. Readers never write (they map read-only).
//  2. Record i (i = 0, 1, 2, ...) lives in slot i % capacity; capacity is a power of two.
//  3. slot.seq == 2*i + 1 while record i is being written and 2*i + 2 once it is complete;
//     0 means the slot was never written. seq only grows.
//  4. cursor.head == number of records ever completed; it is stored (release) after the
//     record's final seq, so every record below head is complete or already overwritten.
//  5. A reader copies a record, then re-reads seq: equal to 2*i + 2 before and after means
//     the copy is consistent (seqlock); anything else means the writer lapped the reader and
//     the record is counted as lost, never returned torn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gshare/shm/channel_layout.h"

namespace gshare::shm {

inline constexpr uint64_t kEventRingMagic = 0x31474E5252485347ULL;  // "GSHRRNG1" (little-endian)
// Version 2 added types 14-16 and args[3] of the swap-end records (docs/protocol.md).
inline constexpr uint32_t kEventRingAbiVersion = 2;
inline constexpr uint64_t kMaxEventRingCapacity = uint64_t{1} << 24;  // 1 GiB of records

enum class EventType : uint32_t {
  kRegister = 1,      // args: quota_bytes, slo_ms, pid, uid
  kUnregister = 2,    // args: reason (0 clean, 1 died, 2 malformed channel, 3 swap order not
                      // acknowledged in time, 4 ignored preemption, checkpoint failed,
                      // 5 flooded its doorbell)
  kGrant = 3,         // args: grant seq, slice_deadline_ns
  kYield = 4,         // args: grant seq, held_ns
  kPreempt = 5,       // args: grant seq
  kSwapOutBegin = 6,  // args: order seq, bytes
  kSwapOutEnd = 7,    // args: order seq, bytes moved, duration_ns, resident bytes after
  kSwapInBegin = 8,   // args: order seq, bytes
  kSwapInEnd = 9,     // args: order seq, bytes moved, duration_ns, resident bytes after
  kBurstStart = 10,   // args: client-reported start_ns
  kBurstEnd = 11,     // args: client-reported end_ns, gpu_time_ns
  kRevoke = 12,       // args: grant seq, reason
  kCheckpoint = 13,   // args: 0 checkpointed / 1 restored, gpu
  kClientName = 14,   // args: the function name, up to 32 bytes, NUL-padded (PackEventName)
  kReservation = 15,  // args: GPU reserved bytes after the change, this client's reservation (0: released)
  kSloChange = 16,    // args: new slo_ms
  kLease = 17,        // args: what (0 offered, 1 taken, 2 revoked, 3 revoke lost to a take), lease seq
};
inline constexpr uint32_t kMaxEventType = 17;

struct alignas(kCacheLine) EventRingHeader {
  uint64_t magic;          // kEventRingMagic
  uint32_t abi_version;    // kEventRingAbiVersion
  uint32_t record_size;    // sizeof(EventSlot)
  uint64_t capacity;       // slots; a power of two
  uint64_t created_ns;     // CLOCK_MONOTONIC at creation
  uint64_t writer_epoch;   // the arbiter epoch that writes this ring
  uint64_t reserved[3];
};

struct alignas(kCacheLine) EventRingCursor {
  uint64_t head;  // records completed so far (next index to write)
  uint64_t reserved[7];
};

struct alignas(kCacheLine) EventSlot {
  uint64_t seq;           // 2*i+1 writing, 2*i+2 complete (invariant 3)
  uint64_t timestamp_ns;  // CLOCK_MONOTONIC when the arbiter recorded it
  uint32_t type;          // EventType
  uint32_t client_id;     // 0: not about one client
  uint32_t gpu;           // kNoGpu: not about one GPU
  uint32_t reserved;
  uint64_t args[4];       // meaning per EventType
};

inline constexpr size_t kEventRingRecordsOffset = 2 * kCacheLine;
inline constexpr size_t EventRingBytes(uint64_t capacity) {
  return kEventRingRecordsOffset + static_cast<size_t>(capacity) * sizeof(EventSlot);
}

static_assert(sizeof(EventRingHeader) == kCacheLine);
static_assert(sizeof(EventRingCursor) == kCacheLine);
static_assert(sizeof(EventSlot) == kCacheLine);
static_assert(offsetof(EventSlot, timestamp_ns) == 8 && offsetof(EventSlot, type) == 16);
static_assert(offsetof(EventSlot, args) == 32);
static_assert(offsetof(EventRingHeader, capacity) == 16 && offsetof(EventRingHeader, writer_epoch) == 32);
static_assert(std::is_standard_layout_v<EventSlot> && std::is_trivially_copyable_v<EventSlot>);

}  // namespace gshare::shm
