// CaptureRing: prologue (identity records already in the ring), then a polling window.
#include "gshare/trace/capture.h"

#include <sys/stat.h>

#include <span>
#include <thread>

#include "gshare/shm/futex.h"

namespace gshare::trace {
namespace {

bool IsContext(shm::EventType t) {
  return t == shm::EventType::kRegister || t == shm::EventType::kClientName ||
         t == shm::EventType::kSloChange || t == shm::EventType::kReservation ||
         t == shm::EventType::kUnregister;
}

// Appends every record the reader can copy now to `out`.
void Drain(shm::EventRingReader& reader, std::vector<shm::Event>& out) {
  shm::Event batch[256];
  for (;;) {
    const size_t n = reader.Read(std::span<shm::Event>(batch));
    out.insert(out.end(), batch, batch + n);
    if (n < std::size(batch)) return;
  }
}

ino_t Inode(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace

Capture CaptureAll(shm::EventRingReader& reader) {
  Capture c;
  reader.SeekToOldest();
  const uint64_t lost_before = reader.stats().lost;
  Drain(reader, c.events);
  c.lost = reader.stats().lost - lost_before;
  c.end_ns = shm::MonotonicNowNs();
  c.begin_ns = c.events.empty() ? c.end_ns : c.events.front().timestamp_ns;
  c.writer_epoch = reader.writer_epoch();
  return c;
}

shm::Result<Capture> CaptureRing(const CaptureOptions& options) {
  auto reader = shm::EventRingReader::Open(options.ring_path);
  if (!reader.ok()) return reader.status();
  const ino_t inode = Inode(options.ring_path);
  Capture c;
  if (options.from_start) {
    c = CaptureAll(*reader);
  } else {
    // Prologue: who is registered (their records may be far back in the ring).
    std::vector<shm::Event> past;
    Drain(*reader, past);
    for (const auto& e : past)
      if (IsContext(e.type)) c.context.push_back(e);
    c.begin_ns = shm::MonotonicNowNs();
    c.writer_epoch = reader->writer_epoch();
  }
  if (options.on_started) options.on_started();
  if (options.duration.count() <= 0) return c;
  const uint64_t lost_before = reader->stats().lost;
  const uint64_t deadline = shm::MonotonicNowNs() + static_cast<uint64_t>(options.duration.count());
  while (shm::MonotonicNowNs() < deadline && !(options.stop != nullptr && options.stop->load())) {
    std::this_thread::sleep_for(options.poll);
    Drain(*reader, c.events);
    c.ring_replaced = c.ring_replaced || Inode(options.ring_path) != inode;
  }
  Drain(*reader, c.events);
  c.lost += reader->stats().lost - lost_before;
  c.end_ns = shm::MonotonicNowNs();
  return c;
}

}  // namespace gshare::trace
