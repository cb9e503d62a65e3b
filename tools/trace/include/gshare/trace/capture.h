// Capturing records from the node's event ring (the file given to gshare-arbiter --event-ring)
// without disturbing the arbiter: the ring is mapped read-only and polled; records the writer
// overwrote before they were copied are counted, never returned torn (docs/protocol.md, 3).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gshare/shm/event_ring.h"
#include "gshare/shm/status.h"

namespace gshare::trace {

struct CaptureOptions {
  std::string ring_path;
  // How long to record from now; zero = only what is in the ring at the start ("dump").
  std::chrono::nanoseconds duration{0};
  // Keep every record still in the ring, not only those written after the start.
  bool from_start = false;
  // How often the ring is polled while recording.
  std::chrono::milliseconds poll{10};
  // Set (e.g. by a SIGINT handler) to end a recording early. May be null.
  const std::atomic<bool>* stop = nullptr;
  // Called (on the calling thread) once the ring is open and the window has begun: records
  // written from then on are in Capture::events. May be empty.
  std::function<void()> on_started;
};

struct Capture {
  // Records before the window that say who the clients are (register, name, SLO change,
  // reservation), so a recording that starts mid-run still names everyone.
  std::vector<shm::Event> context;
  std::vector<shm::Event> events;  // the window, oldest first
  uint64_t begin_ns = 0;           // CLOCK_MONOTONIC: start of the window
  uint64_t end_ns = 0;             // end of the window
  uint64_t lost = 0;               // records of the window overwritten before they were read
  uint64_t writer_epoch = 0;
  bool ring_replaced = false;      // the arbiter restarted (new ring file) while recording
};

// Reads `options.ring_path`. Blocks for `options.duration` (or until *stop). Errors: the ring
// cannot be opened or is not a ring of this version (the status says which).
shm::Result<Capture> CaptureRing(const CaptureOptions& options);

// Reads everything an already attached reader can see now, oldest first (tests use this with an
// anonymous ring). `begin_ns` = the first record's time, `end_ns` = now.
Capture CaptureAll(shm::EventRingReader& reader);

}  // namespace gshare::trace
