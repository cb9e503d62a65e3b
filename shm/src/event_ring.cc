// Event ring: single-producer append with per-slot sequence numbers; seqlock-style readers
// that detect loss (invariants in event_ring_layout.h).
#include "gshare/shm/event_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gshare/shm/atomic_word.h"
#include "gshare/shm/futex.h"
#include "gshare/shm/socket_file.h"

namespace gshare::shm {
namespace {

bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

EventSlot* Slots(void* base) {
  return reinterpret_cast<EventSlot*>(static_cast<char*>(base) + kEventRingRecordsOffset);
}
const EventSlot* Slots(const void* base) {
  return reinterpret_cast<const EventSlot*>(static_cast<const char*>(base) + kEventRingRecordsOffset);
}
EventRingCursor* Cursor(void* base) {
  return reinterpret_cast<EventRingCursor*>(static_cast<char*>(base) + kCacheLine);
}
const EventRingCursor* Cursor(const void* base) {
  return reinterpret_cast<const EventRingCursor*>(static_cast<const char*>(base) + kCacheLine);
}

}  // namespace

std::array<uint64_t, 4> PackEventName(std::string_view name) {
  std::array<uint64_t, 4> args{};
  std::memcpy(args.data(), name.data(), std::min(name.size(), sizeof(args)));
  return args;
}

std::string UnpackEventName(const std::array<uint64_t, 4>& args) {
  char bytes[sizeof(args)];
  std::memcpy(bytes, args.data(), sizeof(args));
  return std::string(bytes, strnlen(bytes, sizeof(bytes)));
}

Result<EventRingWriter> EventRingWriter::Init(UniqueFd fd, uint64_t capacity, uint64_t writer_epoch) {
  const size_t bytes = EventRingBytes(capacity);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return Status::FromErrno("ftruncate ring", errno);
  auto mapping = Mapping::MapShared(fd.get(), bytes, /*writable=*/true);
  if (!mapping.ok()) return mapping.status();
  auto* h = static_cast<EventRingHeader*>(mapping->data());
  h->abi_version = kEventRingAbiVersion;
  h->record_size = sizeof(EventSlot);
  h->capacity = capacity;
  h->created_ns = MonotonicNowNs();
  h->writer_epoch = writer_epoch;
  StoreRelease(&h->magic, kEventRingMagic);  // last: a reader that sees the magic sees the rest
  EventRingWriter w;
  w.fd_ = std::move(fd);
  w.mapping_ = std::move(mapping).value();
  w.capacity_ = capacity;
  return w;
}

Result<EventRingWriter> EventRingWriter::CreateAnonymous(uint64_t capacity, uint64_t writer_epoch) {
  if (!IsPowerOfTwo(capacity) || capacity > kMaxEventRingCapacity) {
    return Status(StatusCode::kInvalidArgument, "ring capacity must be a power of two <= 2^24");
  }
  UniqueFd fd(::memfd_create("gshare-events", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return Status::FromErrno("memfd_create", errno);
  auto w = Init(std::move(fd), capacity, writer_epoch);
  if (w.ok()) (void)::fcntl(w->fd(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  return w;
}

Result<EventRingWriter> EventRingWriter::CreateFile(const std::string& path, uint64_t capacity,
                                                    uint64_t writer_epoch, mode_t mode,
                                                    std::optional<gid_t> group) {
  if (!IsPowerOfTwo(capacity) || capacity > kMaxEventRingCapacity) {
    return Status(StatusCode::kInvalidArgument, "ring capacity must be a power of two <= 2^24");
  }
  // A directory where another uid could swap the file would let it feed readers its own ring.
  if (Status s = CheckSafeDirectory(path); !s.ok()) return s;
  // Replace, never reuse: readers of a previous ring keep their own (old) inode.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Status::FromErrno("unlink '" + path + "'", errno);
  // Born owner-only; the group is set while it still is, then the mode: the file is never
  // readable by anyone `mode` and `group` do not name, not even for a moment.
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Status::FromErrno("create '" + path + "'", errno);
  if (group && ::fchown(fd.get(), static_cast<uid_t>(-1), *group) != 0)
    return Status::FromErrno("chown '" + path + "' to gid " + std::to_string(*group), errno);
  if (::fchmod(fd.get(), mode) != 0) return Status::FromErrno("fchmod '" + path + "'", errno);
  return Init(std::move(fd), capacity, writer_epoch);
}

void EventRingWriter::Append(const Event& e) {
  void* base = mapping_.data();
  const uint64_t i = next_;
  EventSlot* s = &Slots(base)[i & (capacity_ - 1)];
  StoreRelaxed(&s->seq, 2 * i + 1);
  FenceRelease();  // the odd seq is visible before any payload store
  StoreRelaxed(&s->timestamp_ns, e.timestamp_ns);
  StoreRelaxed(&s->type, static_cast<uint32_t>(e.type));
  StoreRelaxed(&s->client_id, e.client_id);
  StoreRelaxed(&s->gpu, e.gpu);
  for (size_t k = 0; k < e.args.size(); ++k) StoreRelaxed(&s->args[k], e.args[k]);
  StoreRelease(&s->seq, 2 * i + 2);
  next_ = i + 1;
  StoreRelease(&Cursor(base)->head, next_);
}

Result<EventRingReader> EventRingReader::Open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Status::FromErrno("open event ring '" + path + "'", errno);
  return Attach(std::move(fd));
}

Result<EventRingReader> EventRingReader::Attach(UniqueFd fd) {
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("fstat ring", errno);
  const auto size = static_cast<size_t>(st.st_size);
  if (size < EventRingBytes(0)) return Status(StatusCode::kMalformed, "event ring file is too small");
  auto mapping = Mapping::MapShared(fd.get(), size, /*writable=*/false);
  if (!mapping.ok()) return mapping.status();
  const auto* h = static_cast<const EventRingHeader*>(mapping->data());
  if (LoadAcquire(&h->magic) != kEventRingMagic) return Status(StatusCode::kMalformed, "event ring has a bad magic");
  if (h->abi_version != kEventRingAbiVersion) {
    return Status(StatusCode::kVersionMismatch,
                  "event ring ABI version " + std::to_string(h->abi_version) + ", reader speaks " +
                      std::to_string(kEventRingAbiVersion));
  }
  if (h->record_size != sizeof(EventSlot)) return Status(StatusCode::kMalformed, "event ring record size differs");
  const uint64_t cap = h->capacity;
  if (!IsPowerOfTwo(cap) || cap > kMaxEventRingCapacity || EventRingBytes(cap) != size) {
    return Status(StatusCode::kMalformed, "event ring capacity does not match its size");
  }
  EventRingReader r;
  r.mapping_ = std::move(mapping).value();
  r.capacity_ = cap;
  r.SeekToOldest();
  return r;
}

uint64_t EventRingReader::writer_epoch() const { return header()->writer_epoch; }

void EventRingReader::SeekToOldest() {
  const uint64_t head = LoadAcquire(&Cursor(mapping_.data())->head);
  next_ = head > capacity_ ? head - capacity_ : 0;
}

void EventRingReader::SeekToNewest() { next_ = LoadAcquire(&Cursor(mapping_.data())->head); }

size_t EventRingReader::Read(std::span<Event> out) {
  const void* base = mapping_.data();
  const EventSlot* slots = Slots(base);
  size_t n = 0;
  uint64_t head = LoadAcquire(&Cursor(base)->head);
  while (n < out.size()) {
    if (next_ >= head) break;
    if (head - next_ > capacity_) {  // lapped: everything before head - capacity is gone
      stats_.lost += head - capacity_ - next_;
      next_ = head - capacity_;
    }
    const EventSlot* s = &slots[next_ & (capacity_ - 1)];
    const uint64_t expected = 2 * next_ + 2;
    const uint64_t s1 = LoadAcquire(&s->seq);
    if (s1 != expected) {
      if (s1 < expected) break;  // not published yet (cannot happen below head; be safe)
      ++stats_.lost;             // overwritten (or being overwritten) by a later record
      ++next_;
      head = LoadAcquire(&Cursor(base)->head);
      continue;
    }
    Event e;
    e.index = next_;
    e.timestamp_ns = LoadRelaxed(&s->timestamp_ns);
    const uint32_t type = LoadRelaxed(&s->type);
    e.client_id = LoadRelaxed(&s->client_id);
    e.gpu = LoadRelaxed(&s->gpu);
    for (size_t k = 0; k < e.args.size(); ++k) e.args[k] = LoadRelaxed(&s->args[k]);
    FenceAcquire();  // the payload loads complete before the re-check
    if (LoadRelaxed(&s->seq) != s1) {
      ++stats_.lost;
      ++next_;
      head = LoadAcquire(&Cursor(base)->head);
      continue;
    }
    ++next_;
    if (type == 0 || type > kMaxEventType) continue;  // not something this reader knows
    e.type = static_cast<EventType>(type);
    out[n++] = e;
    ++stats_.read;
  }
  return n;
}

}  // namespace gshare::shm
