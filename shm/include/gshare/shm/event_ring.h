// The node event ring (layout in event_ring_layout.h): the arbiter appends trace records
// (grants, yields, preemptions, swaps, bursts, registrations) lock-free, overwriting the
// oldest; readers copy records out consistently and learn how many they lost.
//
// Why one ring per node, written by the arbiter, rather than one per channel: the arbiter
// sees every event (client reports reach it through the channel), so a single producer needs
// no multi-writer protocol; a client cannot forge or flood the trace; one file gives the trace
// tool a total order; and clients never get a mapping that shows other clients' activity.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gshare/shm/event_ring_layout.h"
#include "gshare/shm/mapping.h"
#include "gshare/shm/status.h"
#include "gshare/shm/unique_fd.h"

namespace gshare::shm {

struct Event {
  uint64_t index = 0;  // position in the stream of all records ever written
  uint64_t timestamp_ns = 0;
  EventType type = EventType::kRegister;
  uint32_t client_id = 0;
  uint32_t gpu = 0;
  std::array<uint64_t, 4> args{};
};

// The args of a kClientName record: the first 32 bytes of `name`, NUL-padded, in memory order
// (little-endian words). UnpackEventName stops at the first NUL. Thread-safe (pure).
std::array<uint64_t, 4> PackEventName(std::string_view name);
std::string UnpackEventName(const std::array<uint64_t, 4>& args);

// The single producer. Thread-safety: Append() from one thread at a time (REQUIRES external
// serialisation if several arbiter threads record events).
class EventRingWriter {
 public:
  EventRingWriter() = default;
  // An anonymous ring (memfd); share it by passing fd().
  static Result<EventRingWriter> CreateAnonymous(uint64_t capacity, uint64_t writer_epoch);
  // A ring in a file (e.g. /run/gshare/events), created with `mode` and, if given, `group`
  // (the operator decides who may read the trace: it names every tenant's functions, pids and
  // uids). The file is created 0600 and only then given its group and mode, so it is never
  // readable more widely than asked. An existing file is replaced. Its directory must be one no
  // other uid can swap files in (CheckSafeDirectory in socket_file.h).
  static Result<EventRingWriter> CreateFile(const std::string& path, uint64_t capacity,
                                            uint64_t writer_epoch, mode_t mode,
                                            std::optional<gid_t> group = std::nullopt);

  // Appends one record; never blocks, never fails. `event.index` is ignored (assigned here).
  void Append(const Event& event);
  uint64_t written() const { return next_; }
  uint64_t capacity() const { return capacity_; }
  int fd() const { return fd_.get(); }

 private:
  static Result<EventRingWriter> Init(UniqueFd fd, uint64_t capacity, uint64_t writer_epoch);

  UniqueFd fd_;
  Mapping mapping_;
  uint64_t capacity_ = 0;
  uint64_t next_ = 0;
};

struct ReadStats {
  uint64_t read = 0;  // records copied out so far
  uint64_t lost = 0;  // records overwritten before this reader could copy them
};

// A consumer with its own cursor. Any number of readers, in any processes. Thread-safety: one
// thread per reader object.
class EventRingReader {
 public:
  EventRingReader() = default;
  static Result<EventRingReader> Open(const std::string& path);
  // Maps `fd` read-only after validating the header and size. Takes ownership.
  static Result<EventRingReader> Attach(UniqueFd fd);

  // Copies up to out.size() records, oldest first, from the cursor on; returns how many.
  // Records the writer overwrote before they were copied are skipped and counted in stats();
  // records of a type this reader does not know (newer writer) are skipped silently.
  size_t Read(std::span<Event> out);
  // Moves the cursor to the oldest record still present / to the next record to be written.
  void SeekToOldest();
  void SeekToNewest();

  // Index of the next record this reader will try to copy.
  uint64_t position() const { return next_; }
  const ReadStats& stats() const { return stats_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t writer_epoch() const;

 private:
  const EventRingHeader* header() const { return static_cast<const EventRingHeader*>(mapping_.data()); }

  Mapping mapping_;
  uint64_t capacity_ = 0;
  uint64_t next_ = 0;
  ReadStats stats_;
};

}  // namespace gshare::shm
